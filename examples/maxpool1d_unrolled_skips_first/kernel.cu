// Buggy twin of maxpool1d_unrolled: the max tree starts at the window's second element, so the first one
// never takes part (max_pool1d(8, stride 4) on 16 x 64 x 8196, one thread per output element).
#define L 8196
#define OL 2048
#define K 8
#define STRIDE 4
extern "C" __global__ void max_pool(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int o = idx % OL;
    const float* in = x + idx / OL * L + o * STRIDE;
    float acc = in[1];   // BUG: in[0] is never read
#pragma unroll
    for (int k = 1; k < K; ++k) acc = fmaxf(acc, in[k]);
    y[idx] = acc;
}
