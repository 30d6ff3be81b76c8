#define BS 32
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

// cross_entropy(x, target), mean over 16 rows of 256 logits: one block per row computes
// logsumexp(x_row) - x_row[target] and adds it / rows into the zeroed scalar out.
extern "C" __global__ void cross_entropy(const float* __restrict__ x, const long long* __restrict__ target,
                                         float* out, int rows, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float m = row[t];
    for (int c = t + BS; c < cols; c += BS) m = fmaxf(m, row[c]);
    float mx = block_max(m, s);
    float sum = 0.0f;
    for (int c = t; c < cols; c += BS) sum += expf(row[c] - mx);
    float lse = mx + logf(block_sum(sum, s));
    if (t == 0) atomicAdd(out, (lse - row[target[blockIdx.x]]) / rows);
}
