// AvgPool3d(k 3, stride 2, padding 1), padding counted, on 16 x 32 x 128 x 128 x 256: one thread per output, the 3^3 window unrolled.
#define D 128
#define H 128
#define W 256
#define DO 64
#define HO 64
#define WO 128
extern "C" __global__ void avgpool3d(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        long long vol = idx / (DO * HO * WO);
        int od = idx / (HO * WO) % DO, oh = idx / WO % HO, ow = idx % WO;
        const float* in = x + vol * D * H * W;
        float acc = 0.0f;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            int id = od * 2 - 1 + a * 1;
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                int ih = oh * 2 - 1 + i * 1;
#pragma unroll
                for (int j = 0; j < 3; ++j) {
                    int iw = ow * 2 - 1 + j * 1;
                    if (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
                        acc = acc + in[((long long)id * H + ih) * W + iw];
                }
            }
        }
        y[idx] = acc / 27.0f;
    }
}
