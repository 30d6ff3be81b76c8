// Buggy twin of 92: adds before storing, so y[c] includes x[c] (an inclusive scan). Exclusive cumsum:
// y[c] = x[0] + ... + x[c - 1], y[0] = 0: one thread per row of 32768, a running sum along the row.
extern "C" __global__ void cumsum_exclusive_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* in = x + (long long)r * cols;
        float* out = y + (long long)r * cols;
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) {
            acc += in[c];               // BUG: stored after the add, x[r, c] is included
            out[c] = acc;
        }
    }
}
