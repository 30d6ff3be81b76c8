// Conv3d(3, 64, (3, 5, 7)) on 16 x 3 x 64^3.
// Direct convolution, one thread per output element (n, oc, od, oh, ow); a loop over the group's input
// channels, the 3 x 5 x 7 window unrolled, taps outside the input (padding) skipped.
#define IC 3
#define ICG 3
#define OCG 64
#define ID 64
#define IH 64
#define IW 64
#define OC 64
#define OD 62
#define OH 60
#define OW 58
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
        const float* wk = w + ((long long)oc * ICG + icg) * 3 * 5 * 7;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            int zd = od * 1 - 0 + a * 1;
#pragma unroll
            for (int i = 0; i < 5; ++i) {
                int zh = oh * 1 - 0 + i * 1;
#pragma unroll
                for (int j = 0; j < 7; ++j) {
                    int zw = ow * 1 - 0 + j * 1;
                    if (true)
                        acc += in[((long long)zd * IH + zh) * IW + zw] * wk[(a * 5 + i) * 7 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
