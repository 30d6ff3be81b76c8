// Online softmax, one thread per row (8192 rows of 1024 floats): one pass keeps the running max m (from
// -INFINITY) and the sum s of exp(x - m), rescaled by exp(m_old - m_new) whenever the max grows (flash
// attention's inner loop); a second pass writes exp(x - m) / s. The online loop is kept rolled
// (`#pragma unroll 1`): nvcc's 4-way unroll is summarised as well, but the matcher does not yet close the
// unrolled max tree against the reference within the budget (README, issue 16).
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
        s = s * expf(m - m_new) + expf(v - m_new);
        m = m_new;
    }
    float* out = y + (long long)r * cols;
    for (int c = 0; c < cols; ++c) out[c] = expf(row[c] - m) / s;
}
