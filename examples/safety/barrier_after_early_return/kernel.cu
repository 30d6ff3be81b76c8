#include <cuda_runtime.h>
// The tail threads of the last block return before the barrier the others wait at (n = 1000).
extern "C" __global__ void k(const float* x, float* y, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (i >= n) return;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[t] + 1.0f;
}
