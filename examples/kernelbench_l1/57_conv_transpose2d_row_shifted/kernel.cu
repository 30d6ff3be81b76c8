// ConvTranspose2d(64, 64, 3) on 8 x 64 x 1024 x 1024, with a bug: its row taps read one row too low.
// Transposed convolution as a gather, one thread per output element (n, oc, od, oh, ow): for every input
// channel of the group and every tap (unrolled), the input position z = (o + padding - tap * dilation) /
// stride contributes when the division is exact and z lies inside the input.
#define IC 64
#define ICG 64
#define OCG 64
#define ID 1
#define IH 1024
#define IW 1024
#define OC 64
#define OD 1
#define OH 1026
#define OW 1026
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
        const float* wk = w + ((long long)ic * OCG + oc % OCG) * 1 * 3 * 3;
#pragma unroll
        for (int a = 0; a < 1; ++a) {
            int td = od + 0 - a * 1;
            if (td < 0 || td % 1 != 0 || td / 1 >= ID) continue;
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                int th = oh + 1 - i * 1;   // BUG: the row tap is shifted by one (an off-by-one padding)
                if (th < 0 || th % 1 != 0 || th / 1 >= IH) continue;
#pragma unroll
                for (int j = 0; j < 3; ++j) {
                    int tw = ow + 0 - j * 1;
                    if (tw < 0 || tw % 1 != 0 || tw / 1 >= IW) continue;
                    acc += in[((long long)(td / 1) * IH + th / 1) * IW + tw / 1] * wk[(a * 3 + i) * 3 + j];
                }
            }
        }
    }
    y[idx] = acc;
}
