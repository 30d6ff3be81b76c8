// meant to be the biased variance of row r of x: one thread per row, a loop for the mean, then a loop summing the
// squared deviations from it, divided by cols.
extern "C" __global__ void row_var(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) sum += x[r * cols + c];
        float mean = sum / cols;
        float sq = 0.0f;
        for (int c = 0; c < cols; ++c) {
            float d = x[r * cols + c] - mean;
            sq += d * d;
        }
        y[r] = sq / (cols - 1);   // BUG: the unbiased divisor, the reference is biased
    }
}
