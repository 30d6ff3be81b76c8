// Bug: the second factor is x[r, c + cols / 2 + 1], one column past the reference's (loop_half_shift_product).
extern "C" __global__ void half_shift_product(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols / 2; ++c) acc += x[r * cols + c] * x[r * cols + c + cols / 2 + 1];  // bug: one column too far
        y[r] = acc;
    }
}
