#include <cuda_runtime.h>
// Whole blocks return (the condition is on the block index), so no block has a divided barrier.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (blockIdx.x >= 3) return;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[127 - t];
}
