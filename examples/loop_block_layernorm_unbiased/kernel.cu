// BUG: the variance is divided by cols - 1 (unbiased), but nn.LayerNorm normalises with the biased
// variance (divided by cols).
#define BS 256
extern "C" __global__ void layernorm_block(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float sum = 0.0f;
    for (int c = t; c < cols; c += BS) sum += row[c];
    s[t] = sum;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    float mean = s[0] / cols;
    __syncthreads();
    float sq = 0.0f;
    for (int c = t; c < cols; c += BS) {
        float d = row[c] - mean;
        sq += d * d;
    }
    s[t] = sq;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    float rstd = rsqrtf(s[0] / (cols - 1) + 1e-5f);
    for (int c = t; c < cols; c += BS) out[c] = (row[c] - mean) * rstd * w[c] + b[c];
}
