// y[r, c] = x[r, 0] + ... + x[r, c] (inclusive scan): one thread per row, a running sum along the row.
extern "C" __global__ void cumsum_row(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) {
            acc += x[r * cols + c];
            y[r * cols + c] = acc;
        }
    }
}
