#include <cuda_runtime.h>
// One verdict for every n in [1, 1048576]: the guard keeps every access below n <= 1048576.
extern "C" __global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
