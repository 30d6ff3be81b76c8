// BUGGY TWIN of lib_online_softmax_rows: the online sum is never rescaled by exp(m_old - m_new), so it adds
// each exp(x - m) for the max reached at that point, not the row's max. 128 rows of 8 floats: at 768 columns
// the witness search exhausts a 300 s budget on 2 cores (measured, issue 16), so this twin is small.
#include <math.h>
extern "C" __global__ void online_softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + (long long)r * cols;
    float m = -INFINITY, s = 0.0f;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) {
        float v = row[c];
        float m_new = fmaxf(m, v);
        s = s + expf(v - m_new);   // BUG: the terms summed so far are not rescaled by exp(m - m_new)
        m = m_new;
    }
    float* out = y + (long long)r * cols;
    for (int c = 0; c < cols; ++c) out[c] = expf(row[c] - m) / s;
}
