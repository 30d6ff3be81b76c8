#include <cuda_runtime.h>
// Racy (refuted race once __syncwarp is modelled). __syncwarp orders one warp only: lane t reads the slot that a lane of the other warp writes.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncwarp();
    y[t] = s[(t + 32) % 64];
}
