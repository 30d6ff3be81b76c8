// hardsigmoid: clamp(x + 3, 0, 6) / 6.
extern "C" __global__ void hardsigmoid(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
}
