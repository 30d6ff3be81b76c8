// ELU with expm1f, the accurate form libraries use for small negative inputs.
extern "C" __global__ void elu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 2.0f * expm1f(v);  // bug: alpha 2, the reference has alpha 1
    }
}
