// y[r] = mean_c x[r, c]: blockIdx.y is the row, the blocks along x split its columns, and each thread
// atomically adds its element's share into y[r] (which starts at zero).
extern "C" __global__ void row_mean_atomic(const float* __restrict__ x, float* y, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) atomicAdd(y + blockIdx.y, x[(long long)blockIdx.y * cols + c] / cols);
}
