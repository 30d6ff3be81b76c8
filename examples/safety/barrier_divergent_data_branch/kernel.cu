#include <cuda_runtime.h>
// The branch depends on data each thread reads: threads of a block may disagree.
extern "C" __global__ void k(const int* flags, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = 1.0f;
    if (flags[t] > 0) {
        __syncthreads();
        y[t] = s[63 - t];
    }
}
