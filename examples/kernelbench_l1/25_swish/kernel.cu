// y = x * sigmoid(x), as x / (1 + exp(-x)).
extern "C" __global__ void swish(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = v / (1.0f + expf(-v));
    }
}
