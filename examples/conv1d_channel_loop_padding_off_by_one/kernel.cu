// Buggy twin of conv1d_channel_loop_padded: Conv1d(64, 32, 3, padding=1) on 8 x 64 x 4096, but the
// window starts at o - 2, not o - 1 (a wrong padding offset). One thread per output element, a loop
// over the input channels, the 3 taps unrolled, a tap in the padding adding 0 through a select.
#define C_IN 64
#define C_OUT 32
#define L 4096
#define K 3
#define PAD 2   // BUG: the reference pads by 1: every tap is read one position to the left
extern "C" __global__ void conv1d(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                  long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int o = idx % L, oc = idx / L % C_OUT;
    long long b = idx / ((long long)L * C_OUT);
    float acc = 0.0f;
    for (int ic = 0; ic < C_IN; ++ic) {
        const float* in = x + (b * C_IN + ic) * L;
        const float* wk = w + ((long long)oc * C_IN + ic) * K;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            int p = o - PAD + k;
            float v = in[min(max(p, 0), L - 1)];
            acc += (p >= 0 && p < L ? v : 0.0f) * wk[k];
        }
    }
    y[idx] = acc;
}
