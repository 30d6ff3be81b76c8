#include <cuda_runtime.h>
// Reads a's neighbour, writes b: a race only if a and b aliased, and distinct buffers never do.
extern "C" __global__ void k(const float* a, float* b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[(i + 1) % 1024];
}
