// AvgPool2d(k 11, stride 11) on 16 x 64 x 2048 x 2048: one thread per output (n*c, oh, ow) of 186 x 186, the 11 x 11 window unrolled.
#define H 2048
#define W 2048
#define HO 186
#define WO 186
extern "C" __global__ void avgpool2d(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        long long plane = idx / (HO * WO);
        int oh = idx / WO % HO, ow = idx % WO;
        const float* in = x + plane * H * W;
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < 11; ++i) {
            int ih = oh * 11 - 0 + i;
#pragma unroll
            for (int j = 0; j < 11; ++j) {
                int iw = ow * 11 - 0 + j;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) acc = acc + in[ih * W + iw];
            }
        }
        y[idx] = acc / 121.0f;
    }
}
