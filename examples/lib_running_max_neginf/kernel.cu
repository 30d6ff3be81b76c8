// Row max as CUDA libraries write it: each thread's running max starts at -INFINITY (0fFF800000), then a
// butterfly of __shfl_xor_sync maxes per warp, warp leaders' slots in shared memory, and warp 0's butterfly.
// 1024 threads (32 warps) per row of 8192 floats, 8192 rows.
#include <math.h>
#define BS 1024
extern "C" __global__ void row_max(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float partial[BS / 32];
    unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
    const float* row = x + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (unsigned c = t; c < cols; c += BS) m = fmaxf(m, row[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if (lane == 0) partial[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = partial[lane];
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
        if (lane == 0) y[blockIdx.x] = m;
    }
}
