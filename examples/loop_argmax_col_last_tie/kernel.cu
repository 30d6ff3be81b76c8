// Buggy twin of loop_argmax_col: `>=` instead of `>`, so of two equal maxima the last index wins (torch: the first).
extern "C" __global__ void argmax_dim1(const float* __restrict__ x, long long* __restrict__ y, int B, int M, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * C) {
        int b = idx / C;
        int c = idx % C;
        const float* col = x + (long long)b * M * C + c;
        float best = col[0];
        long long arg = 0;
        for (int m = 1; m < M; ++m) {
            float v = col[(long long)m * C];
            if (v >= best) {      // BUG: not strict, so the last index wins a tie
                best = v;
                arg = m;
            }
        }
        y[idx] = arg;
    }
}
