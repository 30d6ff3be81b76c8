#include <cuda_runtime.h>
// The same reversal without the barrier: thread t reads s[127 - t] while thread 127 - t writes it.
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = x[i];
    y[i] = s[127 - t];
}
