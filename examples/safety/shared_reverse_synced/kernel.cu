#include <cuda_runtime.h>
// Reverse each block's slice through shared memory; the barrier orders the writes before the reads.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[127 - t];
}
