// C = tril(A B): the product where j <= i, 0 above the diagonal: one thread per output element C[i, j], block 16 x 16, a K-long dot product.
extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   int M, int N, int K) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
        C[i * N + j] = j <= i ? acc : 0.0f;
    }
}
