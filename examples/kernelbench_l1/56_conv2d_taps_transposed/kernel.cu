// Conv2d(64, 128, (5, 7)) on 8 x 64 x 512 x 256.
// BUGGY: the 5 x 7 filter is read transposed (w[j][i] where w[i][j] is meant).
// Direct convolution, one thread per output element (n, oc, od, oh, ow); a loop over the group's input
// channels, the 1 x 5 x 7 window unrolled, taps outside the input (padding) skipped.
#define IC 64
#define ICG 64
#define OCG 128
#define ID 1
#define IH 512
#define IW 256
#define OC 128
#define OD 1
#define OH 508
#define OW 250
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
        const float* wk = w + ((long long)oc * ICG + icg) * 1 * 5 * 7;
#pragma unroll
        for (int a = 0; a < 1; ++a) {
            int zd = od * 1 - 0 + a * 1;
#pragma unroll
            for (int i = 0; i < 5; ++i) {
                int zh = oh * 1 - 0 + i * 1;
#pragma unroll
                for (int j = 0; j < 7; ++j) {
                    int zw = ow * 1 - 0 + j * 1;
                    if (true)
                        acc += in[((long long)zd * IH + zh) * IW + zw] * wk[(a * 7 + j) * 5 + i];
                }
            }
        }
    }
    y[idx] = acc;
}
