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

// y = x / ||x||_2 per row: one block per row of 65535.
extern "C" __global__ void l2_norm_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = t; c < cols; c += BS) acc += row[c] * row[c];
    float norm = sqrtf(block_sum(acc, s));
    for (int c = t; c < cols; c += BS) out[c] = row[c] / norm;
}
