// Conv2d(3, 96, 11, stride 4, padding 2, bias) on 256 x 3 x 224 x 224.
// Direct convolution, one thread per output element (n, oc, od, oh, ow); a loop over the group's input
// channels, the 1 x 11 x 11 window unrolled, taps outside the input (padding) skipped.
#define IC 3
#define ICG 3
#define OCG 96
#define ID 1
#define IH 224
#define IW 224
#define OC 96
#define OD 1
#define OH 55
#define OW 55
extern "C" __global__ void conv(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
                                   long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int ow = idx % OW, oh = idx / OW % OH, od = idx / ((long long)OW * OH) % OD;
    int oc = idx / ((long long)OW * OH * OD) % OC;
    long long b = idx / ((long long)OW * OH * OD * OC);
    int g = oc / OCG;
    float acc = bias[oc];
    for (int icg = 0; icg < ICG; ++icg) {
        const float* in = x + (b * IC + g * ICG + icg) * ID * IH * IW;
        const float* wk = w + ((long long)oc * ICG + icg) * 1 * 11 * 11;
#pragma unroll
        for (int a = 0; a < 1; ++a) {
            int zd = od * 1 - 0 + a * 1;
#pragma unroll
            for (int i = 0; i < 11; ++i) {
                int zh = oh * 4 - 2 + i * 1;
#pragma unroll
                for (int j = 0; j < 11; ++j) {
                    int zw = ow * 4 - 2 + j * 1;
                    if (zh >= 0 && zh < IH && zw >= 0 && zw < IW)
                        acc += in[((long long)zd * IH + zh) * IW + zw] * wk[(a * 11 + i) * 11 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
