#include <cuda_runtime.h>
// The condition depends on the block index only: all threads of a block take the same side.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (blockIdx.x % 2 == 0) {
        s[t] = x[i];
        __syncthreads();
        y[i] = s[63 - t];
    } else {
        y[i] = x[i];
    }
}
