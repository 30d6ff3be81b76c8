// BUGGY TWIN of 79_conv_transpose1d_strided: the stride test (tw % 2 == 0) is dropped, so odd positions add
// the input at tw / 2 (rounded down) that the transposed convolution never pairs with them.
// ConvTranspose1d(32, 64, 3, stride 2, padding 1, dilation 2) on 16 x 32 x 131072.
// Transposed convolution as a gather, one thread per output element (n, oc, od, oh, ow): for every input
// channel of the group and every tap (unrolled), the input position z = (o + padding - tap * dilation) /
// stride contributes when the division is exact and z lies inside the input.
#define IC 32
#define ICG 32
#define OCG 64
#define ID 1
#define IH 1
#define IW 131072
#define OC 64
#define OD 1
#define OH 1
#define OW 262145
extern "C" __global__ void conv_transpose(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int ow = idx % OW, oh = idx / OW % OH, od = idx / ((long long)OW * OH) % OD;
    int oc = idx / ((long long)OW * OH * OD) % OC;
    long long b = idx / ((long long)OW * OH * OD * OC);
    int g = oc / OCG;
    float acc = 0.0f;
    for (int icg = 0; icg < ICG; ++icg) {
        int ic = g * ICG + icg;
        const float* in = x + (b * IC + ic) * ID * IH * IW;
        const float* wk = w + ((long long)ic * OCG + oc % OCG) * 1 * 1 * 3;
#pragma unroll
        for (int a = 0; a < 1; ++a) {
            int td = od + 0 - a * 1;
            if (td < 0 || td % 1 != 0 || td / 1 >= ID) continue;
#pragma unroll
            for (int i = 0; i < 1; ++i) {
                int th = oh + 0 - i * 1;
                if (th < 0 || th % 1 != 0 || th / 1 >= IH) continue;
#pragma unroll
                for (int j = 0; j < 3; ++j) {
                    int tw = ow + 1 - j * 2;
                    if (tw < 0 || tw / 2 >= IW) continue;   // BUG: the stride test is dropped
                    acc += in[((long long)(td / 1) * IH + th / 1) * IW + tw / 2] * wk[(a * 1 + i) * 3 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
