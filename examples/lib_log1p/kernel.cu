// log1p with log1pf.
extern "C" __global__ void log1p_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = log1pf(x[i]);
    }
}
