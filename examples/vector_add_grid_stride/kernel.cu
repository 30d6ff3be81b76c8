extern "C" __global__ void vadd_grid_stride(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        c[i] = a[i] + b[i];
    }
}
