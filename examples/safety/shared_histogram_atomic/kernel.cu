#include <cuda_runtime.h>
// A per-block histogram in shared memory with shared atomics, then merged into global bins atomically.
extern "C" __global__ void k(const int* x, int* bins) {
    __shared__ int h[16];
    int t = threadIdx.x;
    if (t < 16) h[t] = 0;
    __syncthreads();
    atomicAdd(&h[x[blockIdx.x * 128 + t] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&bins[t], h[t]);
}
