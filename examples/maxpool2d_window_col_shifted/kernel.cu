// MaxPool2d(kernel 4, stride 1, padding 1), written with the column window one tap late: wrong near every row.
// One thread per output of 31 x 31, the 4 x 4 window unrolled; taps taken only inside the plane.
#define H 32
#define W 32
#define HO 31
#define WO 31
extern "C" __global__ void maxpool2d(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        long long plane = idx / (HO * WO);
        int oh = idx / WO % HO, ow = idx % WO;
        const float* in = x + plane * H * W;
        float acc = -INFINITY;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int ih = oh - 1 + i;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                int iw = ow + j;   // BUG: the column window starts one late (padding 0 on the left)
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) acc = fmaxf(acc, in[ih * W + iw]);
            }
        }
        y[idx] = acc;
    }
}
