extern "C" __global__ void scale(const float* __restrict__ x, float alpha, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i] * alpha;
    }
}
