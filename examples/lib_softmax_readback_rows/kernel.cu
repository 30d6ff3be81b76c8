// Two-pass softmax as llm.c's first kernel writes it, one thread per row (8192 rows of 1024 floats): the max,
// then exp(x - max) stored to the output and summed as it is read back, then the output read back once more
// and divided in place (issue 16 item 6). The loops are kept rolled (`#pragma unroll 1`): read back through
// nvcc's 4-way unroll is resolved as well, but the matcher does not yet close the unrolled sums (README).
#include <math.h>
extern "C" __global__ void softmax_readback_rows(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (long long)r * cols;
    float* yr = y + (long long)r * cols;
    float m = -INFINITY;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float s = 0.0f;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) { yr[c] = expf(xr[c] - m); s += yr[c]; }
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) yr[c] = yr[c] / s;
}
