// Depthwise Conv2d(64, 64, 3, groups 64) on 16 x 64 x 512 x 512.
// Direct convolution, one thread per output element (n, oc, od, oh, ow); a loop over the group's input
// channels, the 1 x 3 x 3 window unrolled, taps outside the input (padding) skipped.
#define IC 64
#define ICG 1
#define OCG 1
#define ID 1
#define IH 512
#define IW 512
#define OC 64
#define OD 1
#define OH 510
#define OW 510
extern "C" __global__ void conv(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int ow = idx % OW, oh = idx / OW % OH, od = idx / ((long long)OW * OH) % OD;
    int oc = idx / ((long long)OW * OH * OD) % OC;
    long long b = idx / ((long long)OW * OH * OD * OC);
    int g = oc / OCG;
    float acc = 0.0f;
    for (int icg = 0; icg < ICG; ++icg) {
        const float* in = x + (b * IC + g * ICG + icg) * ID * IH * IW;
        const float* wk = w + ((long long)oc * ICG + icg) * 1 * 3 * 3;
#pragma unroll
        for (int a = 0; a < 1; ++a) {
            int zd = od * 1 - 0 + a * 1;
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                int zh = oh * 1 - 0 + i * 1;
#pragma unroll
                for (int j = 0; j < 3; ++j) {
                    int zw = ow * 1 - 0 + j * 1;
                    if (true)
                        acc += in[((long long)zd * IH + zh) * IW + zw] * wk[(a * 3 + i) * 3 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
