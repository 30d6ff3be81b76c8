#include <cuda_runtime.h>
// i * 64 overflows 32-bit int for i >= 2^25: the index wraps negative and leaves y.
extern "C" __global__ void k(float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i * 64] = 1.0f;
}
