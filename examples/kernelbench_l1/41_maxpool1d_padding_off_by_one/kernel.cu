// A wrong MaxPool1d: the window starts one tap late (padding 3 where the reference pads 4); 64 x 192 x 65536.
#define L 65536
#define LOUT 65523
extern "C" __global__ void maxpool1d(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        long long r = idx / LOUT;
        int o = idx % LOUT;
        const float* in = x + r * L;
        float acc = -INFINITY;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            int at = o * 1 - 3 + k * 3;
            if (at >= 0 && at < L) acc = fmaxf(acc, in[at]);
        }
        y[idx] = acc;
    }
}
