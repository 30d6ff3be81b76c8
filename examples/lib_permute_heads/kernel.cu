// (b, n, h, d) -> (b, h, n, d): the head split of attention (llm.c's permute_kernel).
extern "C" __global__ void permute_bnhd(const float* x, float* y, int B, int N, int H, int D) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * N * H * D) {
        int b = idx / (N * H * D);
        int rest = idx % (N * H * D);
        int n = rest / (H * D);
        rest = rest % (H * D);
        int h = rest / D;
        int d = rest % D;
        y[((b * H + h) * N + n) * D + d] = x[idx];
    }
}
