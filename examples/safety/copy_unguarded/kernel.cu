#include <cuda_runtime.h>
// No guard: 4 x 256 = 1024 threads touch 1024 elements of 1000-element buffers.
extern "C" __global__ void copy(const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
}
