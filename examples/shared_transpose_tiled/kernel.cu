// y = x^T for a rows x cols row-major x, through a 32 x 33 shared tile (the pad avoids bank conflicts).
// Block (32, 32): thread (tx, ty) loads x[by*32 + ty, bx*32 + tx] into tile[ty][tx]; after the barrier it
// stores tile[tx][ty] = x[by*32 + tx, bx*32 + ty] to y[bx*32 + ty, by*32 + tx].
#define TILE 32
extern "C" __global__ void transpose_tiled(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * TILE + tx;
    int r = blockIdx.y * TILE + ty;
    if (r < rows && c < cols) tile[ty][tx] = x[r * cols + c];
    __syncthreads();
    int orow = blockIdx.x * TILE + ty;   // row of y = column of x
    int ocol = blockIdx.y * TILE + tx;   // column of y = row of x
    if (orow < cols && ocol < rows) y[orow * rows + ocol] = tile[tx][ty];
}
