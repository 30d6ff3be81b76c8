#include <cuda_runtime.h>
// A fixed trip count: every thread passes the same barriers; two barriers per iteration separate the
// writes of one iteration from the reads of the previous one.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int r = 0; r < 4; r++) {
        s[t] = x[r * 64 + t];
        __syncthreads();
        acc += s[(t + 1) % 64];
        __syncthreads();
    }
    y[t] = acc;
}
