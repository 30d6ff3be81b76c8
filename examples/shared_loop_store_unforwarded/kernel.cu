// Regression (soundness): a thread stores its shared slot in a loop after a barrier, then reads it back in
// the same barrier interval. The read sees the loop's last store, not the store before the barrier.
extern "C" __global__ void k(const float* x, float* y, int n) {
    __shared__ volatile float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t] * 2.0f;
    __syncthreads();
    for (int i = 0; i < n; ++i) s[t] = x[blockIdx.x * 256 + t] + (float)i;
    y[blockIdx.x * 256 + t] = s[t];
}
