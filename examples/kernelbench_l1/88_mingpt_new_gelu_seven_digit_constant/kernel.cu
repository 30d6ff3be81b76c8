// minGPT's tanh GELU with sqrt(2/pi) typed to seven digits: 0.7978845f is 0x3F4C4229, one ulp below the
// float32 value of the reference's constant (0x3F4C422A). Correct as a float32 kernel; it verifies only by
// identifying that literal with the constant (axiom float.constant), and not with --exact-constants.
extern "C" __global__ void new_gelu(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
