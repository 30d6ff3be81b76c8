#include <cuda_runtime.h>
// A grid-stride loop for every n in [0, 2^24], over buffers the caller sizes.
extern "C" __global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] + 1.0f;
}
