// Buggy twin of 93: the mask's test is inverted, so the masked-out elements are summed. Cumsum of x * mask (mask a
// bool tensor, one byte per element): one thread per row of 32768, a running sum along the row.
extern "C" __global__ void masked_cumsum_rows(const float* __restrict__ x, const bool* __restrict__ mask, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* in = x + (long long)r * cols;
        float* out = y + (long long)r * cols;
        float acc = 0.0f;
        const bool* m = mask + (long long)r * cols;
        for (int c = 0; c < cols; ++c) {
            if (!m[c]) acc += in[c];    // BUG: if (m[c])
            out[c] = acc;
        }
    }
}
