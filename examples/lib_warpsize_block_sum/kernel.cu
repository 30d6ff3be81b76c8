// A block reduction as libraries write it: warpSize (PTX `WARP_SZ`), `o /= 2` halving loops over it (real loops:
// warpSize is no compile-time constant to nvcc), `shfl.sync.down.b32 %r|%p`, and warp leaders writing one shared
// slot per warp, read back by warp 0. 1024 threads per row of 4096 floats, 8192 rows.
extern "C" __global__ void row_sum_warps(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float partial[32];
    int t = threadIdx.x;
    int lane = t % warpSize, warp = t / warpSize;
    const float* row = x + (long long)blockIdx.x * cols;
    float v = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) v += row[c];
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / warpSize;
        v = lane < nwarps ? partial[lane] : 0.0f;
        for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
        if (lane == 0) y[blockIdx.x] = v;
    }
}
