// BUG: the twin of lib_softmax_readback_sum whose last loop reads back the neighbouring row (row ^ 1), which
// another thread writes in the same barrier interval: a race between its stores and these loads (issue 16
// item 6: a read back is its own thread's write, anything else is not modelled as one).
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
    for (long long c = 0; c < cols; ++c) yr[c] = y[(row ^ 1) * cols + c] / s;
}
