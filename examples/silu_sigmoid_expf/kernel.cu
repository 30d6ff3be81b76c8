// SiLU through the accurate expf (not __expf): nvcc expands expf into a range-reduced ex2.approx sequence.
extern "C" __global__ void silu_expf(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v / (1.0f + expf(-v));
    }
}
