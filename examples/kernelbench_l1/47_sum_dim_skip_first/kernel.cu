// Buggy twin of 47: the sum over m starts at 1, dropping x[b, 0, c].
extern "C" __global__ void sum_dim1(const float* __restrict__ x, float* __restrict__ y, int B, int M, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * C) {
        int b = idx / C;
        int c = idx % C;
        const float* col = x + (long long)b * M * C + c;
        float acc = 0.0f;
        for (int m = 1; m < M; ++m) acc += col[(long long)m * C];
        y[idx] = acc;
    }
}
