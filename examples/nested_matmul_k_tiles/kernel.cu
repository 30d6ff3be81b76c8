// C = A B (row-major, A: M x K, B: K x N), one thread per output element, block 16 x 16. The k loop is
// split into tiles of T: a loop over tiles around a loop within the tile (registers only, no shared memory).
extern "C" __global__ void matmul_k_tiles(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K, int T) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int t = 0; t < K; t += T)
            for (int kk = 0; kk < T; ++kk) acc += A[i * K + t + kk] * B[(t + kk) * N + j];
        C[i * N + j] = acc;
    }
}
