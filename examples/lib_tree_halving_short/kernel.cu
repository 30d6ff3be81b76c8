// BUG: the tree stops at `st > 1`, one level short: y holds s[0] without s[1] (half the row, roughly).
extern "C" __global__ void row_sum_tree(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float v = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) v += row[c];
    s[t] = v;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 1; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
