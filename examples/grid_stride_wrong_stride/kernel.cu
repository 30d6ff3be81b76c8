// Bug: the stride is blockDim.x instead of blockDim.x * gridDim.x, so block k revisits the elements of
// blocks k+1, k+2, ...: threads of different blocks store to the same c[i] (a cross-block race).
extern "C" __global__ void vadd_grid_stride(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
