#include <cuda_runtime.h>
// Unbounded buffers still race: threads i and i + 1 both write y[i + 1].
extern "C" __global__ void k(const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
    y[i + 1] = x[i];
}
