// Two-pass softmax with the sum in a loop of its own over what was stored (llm.c's block kernel, per thread):
// rows numbered over a 2-D grid in 64-bit, exp(x - max) written to the output, the output read back to sum
// it, and read back again to divide in place (16384 rows of 768 floats, issue 16 item 6).
#include <math.h>
extern "C" __global__ void softmax_readback_sum(const float* __restrict__ x, float* __restrict__ y, long long cols) {
    long long row = (long long)blockIdx.y * gridDim.x * blockDim.x + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float m = -INFINITY;
    #pragma unroll 1
    for (long long c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    #pragma unroll 1
    for (long long c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m);
    float s = 0.0f;
    #pragma unroll 1
    for (long long c = 0; c < cols; ++c) s += yr[c];
    #pragma unroll 1
    for (long long c = 0; c < cols; ++c) yr[c] = yr[c] / s;
}
