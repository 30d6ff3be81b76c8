// BUG: the barrier between reading the row's max from s[0] and reusing s for the sums is missing, so
// thread 0 may overwrite s[0] with its partial sum before another thread has read the max.
#define BS 256
extern "C" __global__ void softmax_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float m = row[t];                       // cols >= BS
    for (int c = t + BS; c < cols; c += BS) m = fmaxf(m, row[c]);
    s[t] = m;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] = fmaxf(s[t], s[t + st]);
        __syncthreads();
    }
    float mx = s[0];
    float sum = 0.0f;
    for (int c = t; c < cols; c += BS) sum += expf(row[c] - mx);
    s[t] = sum;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    float total = s[0];
    for (int c = t; c < cols; c += BS) out[c] = expf(row[c] - mx) / total;
}
