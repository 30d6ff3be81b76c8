// BUGGY: softplus with threshold 2 instead of torch's 20: x > 2 ? x : log(1 + exp(x)).
extern "C" __global__ void softplus(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = v > 2.0f ? v : log1pf(expf(v));
    }
}
