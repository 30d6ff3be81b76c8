// BatchNorm2d (training mode) written another way than KernelBench 33's: one block of 512 threads per channel,
// an int flat index over (n, hw) decoded with a shift and a mask (n = i >> 12, hw = i & 4095), and block-wide
// sums by warp shuffles, one shared slot per warp, warp 0 summing the slots and leaving the total in a slot
// that every thread reads back. 16 x 32 x 64 x 64.
#define N 16
#define C 32
#define LOG_HW 12
#define HW (1 << LOG_HW)
#define BS 512
#define WARPS (BS / 32)

__device__ __forceinline__ float block_sum(float v, float* part) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < WARPS ? part[lane] : 0.0f;
        for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
        if (lane == 0) part[32] = v;
    }
    __syncthreads();
    float total = part[32];
    __syncthreads();
    return total;
}

extern "C" __global__ void batch_norm_shifts(const float* __restrict__ x, const float* __restrict__ w,
                                             const float* __restrict__ b, float* __restrict__ y) {
    __shared__ float part[33];
    const int ch = blockIdx.x;
    const int count = N << LOG_HW;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < count; i += BS) sum += x[((i >> LOG_HW) * C + ch) * HW + (i & (HW - 1))];
    const float mean = block_sum(sum, part) / (float)count;
    float sq = 0.0f;
    for (int i = threadIdx.x; i < count; i += BS) {
        float d = x[((i >> LOG_HW) * C + ch) * HW + (i & (HW - 1))] - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(block_sum(sq, part) / (float)count + 1e-5f);
    const float scale = w[ch] * rstd, shift = b[ch];
    for (int i = threadIdx.x; i < count; i += BS) {
        int at = ((i >> LOG_HW) * C + ch) * HW + (i & (HW - 1));
        y[at] = (x[at] - mean) * scale + shift;
    }
}
