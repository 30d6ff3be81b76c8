// Buggy twin of 34: the variance is divided by n - 1 (the unbiased estimate); InstanceNorm2d divides by n.
#define BS 256
// Sum of every thread's v over the block, through a shared-memory tree; every thread returns it.
__device__ __forceinline__ float block_sum(float v, float* s) {
    int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    float total = s[0];
    __syncthreads();
    return total;
}

// InstanceNorm2d (no affine) on 112 x 64 x 512 x 512: one block per (n, c) plane of 262144 contiguous elements: a strided sum and tree for the mean, the same
// for the squared deviations (biased variance), then the normalised values.
extern "C" __global__ void instance_norm(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float sum = 0.0f;
    for (int c = t; c < cols; c += BS) sum += row[c];
    float mean = block_sum(sum, s) / cols;
    float sq = 0.0f;
    for (int c = t; c < cols; c += BS) {
        float d = row[c] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, s) / (cols - 1) + 1e-5f);   // BUG: the unbiased variance
    for (int c = t; c < cols; c += BS) out[c] = (row[c] - mean) * rstd;
}
