// meant to be an inclusive scan, but stores before multiplying (an exclusive scan): one thread per row, a running
// product along the row.
extern "C" __global__ void cumprod_row(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 1.0f;
        for (int c = 0; c < cols; ++c) {
            y[r * cols + c] = acc;          // BUG: stored before x[r, c] is multiplied in
            acc *= x[r * cols + c];
        }
    }
}
