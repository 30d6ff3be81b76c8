// BUG: the warp leaders write slot `lane` (always 0) instead of slot `warp`: the 32 leaders of a block race on
// partial[0] in one barrier interval.
extern "C" __global__ void row_sum_warps(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float partial[32];
    int t = threadIdx.x;
    int lane = t % warpSize, warp = t / warpSize;
    const float* row = x + (long long)blockIdx.x * cols;
    float v = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) v += row[c];
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) partial[lane] = v;   // BUG: the slot of lane 0, not of the warp
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / warpSize;
        v = lane < nwarps ? partial[lane] : 0.0f;
        for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
        if (lane == 0) y[blockIdx.x] = v;
    }
}
