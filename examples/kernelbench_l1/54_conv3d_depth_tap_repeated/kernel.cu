// Conv3d(3, 64, 3) on 16 x 3 x 64^3.
// BUGGY: the last depth tap reads the middle plane again (od + 1 where od + 2 is meant).
// Direct convolution, one thread per output element (n, oc, od, oh, ow); a loop over the group's input
// channels, the 3 x 3 x 3 window unrolled, taps outside the input (padding) skipped.
#define IC 3
#define ICG 3
#define OCG 64
#define ID 64
#define IH 64
#define IW 64
#define OC 64
#define OD 62
#define OH 62
#define OW 62
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
        const float* wk = w + ((long long)oc * ICG + icg) * 3 * 3 * 3;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            int zd = od * 1 - 0 + (a == 2 ? 1 : a) * 1;
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
