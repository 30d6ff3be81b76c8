// Conv2d(32, 64, (5, 9)) on 8 x 32 x 512 x 512.
// Direct convolution, one thread per output element (n, oc, od, oh, ow); a loop over the group's input
// channels, the 1 x 5 x 9 window unrolled, taps outside the input (padding) skipped.
#define IC 32
#define ICG 32
#define OCG 64
#define ID 1
#define IH 512
#define IW 512
#define OC 64
#define OD 1
#define OH 508
#define OW 504
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
        const float* wk = w + ((long long)oc * ICG + icg) * 1 * 5 * 9;
#pragma unroll
        for (int a = 0; a < 1; ++a) {
            int zd = od * 1 - 0 + a * 1;
#pragma unroll
            for (int i = 0; i < 5; ++i) {
                int zh = oh * 1 - 0 + i * 1;
#pragma unroll
                for (int j = 0; j < 9; ++j) {
                    int zw = ow * 1 - 0 + j * 1;
                    if (true)
                        acc += in[((long long)zd * IH + zh) * IW + zw] * wk[(a * 5 + i) * 9 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
