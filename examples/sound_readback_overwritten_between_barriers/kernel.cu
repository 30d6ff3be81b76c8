// BUG (a soundness guard): each thread stores exp(x - max) for its row, then, between two barriers, zeroes
// the first element of its neighbour's row, then reads its own row back to normalise it. No two threads race
// (barriers order the writes), but the element a thread reads back first is the neighbour's 0, not its own
// store. A read back is its own earlier store's value only where no other thread of the block writes the
// element in a barrier interval in between (issue 16 item 6): here that premise fails, so LARK answers
// unknown naming that store. (Not refuted: the zeroing store's own value is not compared yet, as nothing
// proves it overwritten.)
#include <math.h>
extern "C" __global__ void softmax_readback_overwritten(const float* __restrict__ x, float* __restrict__ y, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    const float* xr = x + (long long)row * cols;
    float* yr = y + (long long)row * cols;
    float m = -INFINITY;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float s = 0.0f;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) { float e = expf(xr[c] - m); yr[c] = e; s += e; }
    __syncthreads();
    y[(long long)(row ^ 1) * cols] = 0.0f;
    __syncthreads();
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) yr[c] = yr[c] / s;
}
