// Buggy twin of 2: the dot product stops one short (k < K - 1).
extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   int M, int N, int K) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K - 1; ++k) acc += A[i * K + k] * B[k * N + j];
        C[i * N + j] = acc;
    }
}
