// A shared-memory tree whose size is the launch's: `for (unsigned s = blockDim.x / 2; s > 0; s >>= 1)` is a real
// loop in the PTX (blockDim.x is no compile-time constant), halving a register from %ntid.x / 2. One block of 512
// threads per row of 2048 floats, 8192 rows.
extern "C" __global__ void row_sum_tree(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float v = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) v += row[c];
    s[t] = v;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
