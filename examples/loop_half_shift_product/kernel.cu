// y[r] = sum over c < cols / 2 of x[r, c] * x[r, c + cols / 2]: one thread per row. The summand reads x twice,
// so the reindexing onto the reference is searched among the pairings of the reads.
extern "C" __global__ void half_shift_product(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols / 2; ++c) acc += x[r * cols + c] * x[r * cols + c + cols / 2];
        y[r] = acc;
    }
}
