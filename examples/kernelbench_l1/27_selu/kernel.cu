// SELU: scale * (x > 0 ? x : alpha (exp(x) - 1)).
#define ALPHA 1.6732632423543772848170429916717f
#define SCALE 1.0507009873554804934193349852946f
extern "C" __global__ void selu(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = v > 0.0f ? SCALE * v : SCALE * ALPHA * (expf(v) - 1.0f);
    }
}
