// minGPT's tanh GELU: y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), one thread per element.
extern "C" __global__ void new_gelu(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
