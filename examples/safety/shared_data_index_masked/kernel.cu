#include <cuda_runtime.h>
// The same gather with the slot masked into range: any data gives an in-bounds, initialised slot.
extern "C" __global__ void k(const int* idx, const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    y[t] = s[idx[t] & 63];
}
