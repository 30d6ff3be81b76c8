// y = relu(x), but the barrier sits under a thread-dependent branch: threads 64..127 of each block never
// reach it (barrier divergence; undefined behaviour in CUDA), although every value written is right.
extern "C" __global__ void relu_divergent_barrier(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = x[i];
    if (threadIdx.x < 64) __syncthreads();   // BUG: divergent barrier
    if (i < n) y[i] = v > 0.0f ? v : 0.0f;
}
