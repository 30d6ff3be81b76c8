// MaxPool2d(k 4, stride 1, padding 1) on 32 x 64 x 512 x 512: one thread per output (n*c, oh, ow) of 511 x 511, the 4 x 4 window unrolled.
#define H 512
#define W 512
#define HO 511
#define WO 511
extern "C" __global__ void maxpool2d(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        long long plane = idx / (HO * WO);
        int oh = idx / WO % HO, ow = idx % WO;
        const float* in = x + plane * H * W;
        float acc = -INFINITY;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int ih = oh * 1 - 1 + i;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                int iw = ow * 1 - 1 + j;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) acc = fmaxf(acc, in[ih * W + iw]);
            }
        }
        y[idx] = acc;
    }
}
