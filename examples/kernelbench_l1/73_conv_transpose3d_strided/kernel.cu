// ConvTranspose3d(32, 32, 3, stride 2, padding 1) on 4 x 32 x 32 x 64 x 128.
// Transposed convolution as a gather, one thread per output element (n, oc, od, oh, ow): for every input
// channel of the group and every tap (unrolled), the input position z = (o + padding - tap * dilation) /
// stride contributes when the division is exact and z lies inside the input.
#define IC 32
#define ICG 32
#define OCG 32
#define ID 32
#define IH 64
#define IW 128
#define OC 32
#define OD 63
#define OH 127
#define OW 255
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
        const float* wk = w + ((long long)ic * OCG + oc % OCG) * 3 * 3 * 3;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            int td = od + 1 - a * 1;
            if (td < 0 || td % 2 != 0 || td / 2 >= ID) continue;
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                int th = oh + 1 - i * 1;
                if (th < 0 || th % 2 != 0 || th / 2 >= IH) continue;
#pragma unroll
                for (int j = 0; j < 3; ++j) {
                    int tw = ow + 1 - j * 1;
                    if (tw < 0 || tw % 2 != 0 || tw / 2 >= IW) continue;
                    acc += in[((long long)(td / 2) * IH + th / 2) * IW + tw / 2] * wk[(a * 3 + i) * 3 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
