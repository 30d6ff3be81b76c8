#include <cuda_runtime.h>
// The block sum without the barrier inside the loop: round r + 1 reads what round r is still writing.
extern "C" __global__ void k(const float* x, float* sums) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
    }
    if (t == 0) sums[blockIdx.x] = s[0];
}
