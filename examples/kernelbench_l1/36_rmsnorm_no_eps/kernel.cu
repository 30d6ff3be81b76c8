// Buggy twin of 36: the root mean square forgets the epsilon (sqrtf(sq / C), the reference adds 1e-5 to the
// mean before the square root).
#define C 64
#define HW 262144
extern "C" __global__ void rms_norm(const float* __restrict__ x, float* __restrict__ y, int n_pixels) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n_pixels) {
        long long base = (long long)(p / HW) * C * HW + p % HW;
        float sq = 0.0f;
        for (int c = 0; c < C; ++c) {
            float v = x[base + (long long)c * HW];
            sq += v * v;
        }
        float rms = sqrtf(sq / C);
        for (int c = 0; c < C; ++c) y[base + (long long)c * HW] = x[base + (long long)c * HW] / rms;
    }
}
