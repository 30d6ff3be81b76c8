// One warp per row: lane-strided partial sums over the columns, then a shuffle-down reduction; lane 0 stores.
extern "C" __global__ void row_sum_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += x[row * cols + c];
    for (int off = 16; off > 1; off >>= 1) s += __shfl_down_sync(0xffffffff, s, off);  // BUG: stops at offset 2, lane 1's half is lost
    if (lane == 0) y[row] = s;
}
