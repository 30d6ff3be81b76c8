// Online softmax in another style: __expf (ex2.approx of x*log2 e), 64-bit row index from a 2-D grid, a
// while loop, rows of 768 floats (GPT-2's width), 16384 rows.
extern "C" __global__ void online_softmax_fast(const float* __restrict__ x, float* __restrict__ y, long long rows,
                                               int cols) {
    long long r = (long long)(blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + r * cols;
    float run_max = -__int_as_float(0x7f800000), run_sum = 0.f;
    int c = 0;
    #pragma unroll 1
    while (c < cols) {
        const float v = row[c++];
        const float bigger = fmaxf(run_max, v);
        run_sum = run_sum * __expf(run_max - bigger) + __expf(v - bigger);
        run_max = bigger;
    }
    float* out = y + r * cols;
    for (int k = 0; k < cols; ++k) out[k] = __expf(row[k] - run_max) / run_sum;
}
