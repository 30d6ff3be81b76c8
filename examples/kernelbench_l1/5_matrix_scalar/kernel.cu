// C = A * s for a scalar s passed by value, grid-stride over 65536 * 16384 elements.
extern "C" __global__ void scale(const float* __restrict__ A, float s, float* __restrict__ C, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) C[i] = A[i] * s;
}
