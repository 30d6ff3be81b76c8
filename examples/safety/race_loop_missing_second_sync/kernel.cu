#include <cuda_runtime.h>
// Without the second barrier, iteration r + 1's write of s[t + 1] by thread t + 1 races with thread t's
// read of it in iteration r.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int r = 0; r < 4; r++) {
        s[t] = x[r * 64 + t];
        __syncthreads();
        acc += s[(t + 1) % 64];
    }
    y[t] = acc;
}
