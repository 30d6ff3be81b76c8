// Buggy twin of 91: the backward walk starts one column early (cols - 2), so x[r, cols - 1] is never added and
// y[r, cols - 1] never written. Reverse cumsum: y[c] = x[c] + ... + x[cols - 1], one thread per row of 32768.
extern "C" __global__ void cumsum_reverse_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* in = x + (long long)r * cols;
        float* out = y + (long long)r * cols;
        float acc = 0.0f;
        for (int c = cols - 2; c >= 0; --c) {   // BUG: cols - 1
            acc += in[c];
            out[c] = acc;
        }
    }
}
