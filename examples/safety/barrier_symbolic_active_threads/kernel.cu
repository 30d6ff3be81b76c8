#include <cuda_runtime.h>
// Only the first n threads of a block reach the barrier: divergent whenever n < 128.
extern "C" __global__ void k(const float* x, float* y, int n) {
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = x[t];
    if (t < n) {
        __syncthreads();
        y[t] = s[127 - t];
    }
}
