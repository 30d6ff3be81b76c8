// Each block owns a 256-element tile of y: every thread zero-fills its own element, the block synchronises,
// then each thread writes relu(x) to the mirrored element of the tile. The zero is never final: another
// thread of the block overwrites it after the barrier. Correct.
extern "C" __global__ void zero_then_mirror(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long base = (long long)blockIdx.x * 256;
    long long t = threadIdx.x;
    if (base + t < n) y[base + t] = 0.0f;
    __syncthreads();
    long long m = base + 255 - t;
    if (m < n) {
        float v = x[m];
        y[m] = v > 0.0f ? v : 0.0f;
    }
}
