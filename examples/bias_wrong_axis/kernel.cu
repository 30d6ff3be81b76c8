// Bug: adds b[r] (the row's entry) instead of b[c]; the matrix is square, so every access stays in bounds
// but y[r, c] = x[r, c] + b[r] differs from the reference x + b (broadcast along rows) whenever r != c.
extern "C" __global__ void bias_add(const float* __restrict__ x, const float* __restrict__ b,
                                    float* __restrict__ y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        y[r * cols + c] = x[r * cols + c] + b[r];
    }
}
