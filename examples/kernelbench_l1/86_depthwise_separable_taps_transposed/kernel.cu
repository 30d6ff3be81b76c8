// BUG (a buggy twin of 86): the 3 x 3 window reads its weights transposed, dw[c][j][i] for dw[c][i][j].
// Depthwise 3 x 3 (padding 1, 64 channels) then pointwise 1 x 1 (64 -> 128), no biases, on 16 x 64 x 512 x 512,
// fused in one launch: one thread per output (n, oc, h, w) sums pw[oc, c] * depthwise(n, c, h, w) over the 64
// channels, each depthwise value from its unrolled 3 x 3 window with the zero padding skipped.
#define C 64
#define OC 128
#define H 512
#define W 512
extern "C" __global__ void separable(const float* __restrict__ x, const float* __restrict__ dw,
                                     const float* __restrict__ pw, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int w = idx % W, h = idx / W % H;
    int oc = idx / (W * H) % OC;
    long long b = idx / ((long long)W * H * OC);
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* in = x + (b * C + c) * H * W;
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < 3; ++i) {
#pragma unroll
            for (int j = 0; j < 3; ++j) {
                int zh = h - 1 + i, zw = w - 1 + j;
                if (zh >= 0 && zh < H && zw >= 0 && zw < W) v += in[zh * W + zw] * dw[c * 9 + j * 3 + i];
            }
        }
        acc += pw[oc * C + c] * v;
    }
    y[idx] = acc;
}
