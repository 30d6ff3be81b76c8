// y[b, c] = the first index of the min over m of x[b, m, c], x of shape (B, M, C) = (128, 4096, 4095): one thread per output.
extern "C" __global__ void argmin_dim1(const float* __restrict__ x, long long* __restrict__ y, int B, int M, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * C) {
        int b = idx / C;
        int c = idx % C;
        const float* col = x + (long long)b * M * C + c;
        float best = col[0];
        long long arg = 0;
        for (int m = 1; m < M; ++m) {
            float v = col[(long long)m * C];
            if (v < best) {       // strict: the first index wins a tie, as in torch
                best = v;
                arg = m;
            }
        }
        y[idx] = arg;
    }
}
