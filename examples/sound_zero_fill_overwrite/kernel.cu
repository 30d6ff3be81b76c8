// Each block owns a 256-element tile of y: every thread zero-fills its own element, the block synchronises,
// then the first 128 threads write relu(x) to two elements each. The zero is never final: another thread of
// the block overwrites it after the barrier (the final value is the last write in barrier order). Correct.
extern "C" __global__ void zero_then_pairs(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long base = (long long)blockIdx.x * 256;
    long long t = threadIdx.x;
    if (base + t < n) y[base + t] = 0.0f;
    __syncthreads();
    if (t < 128) {
        for (int k = 0; k < 2; ++k) {
            long long m = base + 2 * t + k;
            if (m < n) {
                float v = x[m];
                y[m] = v > 0.0f ? v : 0.0f;
            }
        }
    }
}
