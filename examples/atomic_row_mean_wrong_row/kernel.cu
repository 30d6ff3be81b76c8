// y[r] = mean_c x[r, c], blocks along x split each row's columns, atomics combine them.
// BUG: each block adds into y[blockIdx.x] (its column block) instead of y[blockIdx.y] (its row).
extern "C" __global__ void row_mean_atomic(const float* __restrict__ x, float* y, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) atomicAdd(y + blockIdx.x, x[(long long)blockIdx.y * cols + c] / cols);
}
