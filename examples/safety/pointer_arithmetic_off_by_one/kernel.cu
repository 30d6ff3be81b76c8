#include <cuda_runtime.h>
// The input pointer is advanced by one element: the last thread reads one past the end of x.
extern "C" __global__ void k(const float* x, float* y) {
    const float* p = x + 1;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = p[i];
}
