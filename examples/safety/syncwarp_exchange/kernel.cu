#include <cuda_runtime.h>
// Race-free (verified once __syncwarp is modelled). One warp exchanges values through shared memory; __syncwarp orders the lanes' writes before the reads.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncwarp();
    y[t] = s[(t + 1) % 32];
}
