// y = A v: one thread per row, a K-long dot product.
extern "C" __global__ void matvec(const float* __restrict__ A, const float* __restrict__ v, float* __restrict__ y,
                                  int M, int K) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[r * K + k] * v[k];
        y[r] = acc;
    }
}
