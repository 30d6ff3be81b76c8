#include <cuda_runtime.h>
// The classic block sum: halve the active threads each round, a barrier after each round.
extern "C" __global__ void k(const float* x, float* sums) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) sums[blockIdx.x] = s[0];
}
