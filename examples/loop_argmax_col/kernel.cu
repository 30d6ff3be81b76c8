// y[b, c] = the first index of the max over m of x[b, m, c]: one thread per output, a (value, index) pair carried.
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
            if (v > best) {       // strict: the first index wins a tie, as in torch
                best = v;
                arg = m;
            }
        }
        y[idx] = arg;
    }
}
