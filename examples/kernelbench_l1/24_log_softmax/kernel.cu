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

__device__ __forceinline__ float block_max(float v, float* s) {
    int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] = fmaxf(s[t], s[t + st]);
        __syncthreads();
    }
    float m = s[0];
    __syncthreads();
    return m;
}

// log_softmax over rows of 393216: one block per row; y = x - max - log(sum of exp(x - max)).
extern "C" __global__ void log_softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float m = row[t];                       // cols >= BS
    for (int c = t + BS; c < cols; c += BS) m = fmaxf(m, row[c]);
    float mx = block_max(m, s);
    float sum = 0.0f;
    for (int c = t; c < cols; c += BS) sum += expf(row[c] - mx);
    float lse = logf(block_sum(sum, s));
    for (int c = t; c < cols; c += BS) out[c] = row[c] - mx - lse;
}
