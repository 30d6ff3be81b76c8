// C[b] = A[b] B[b] for 128 batches of 512 x 1024 times 1024 x 2048: one thread per output, grid z = batch.
extern "C" __global__ void bmm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                               int M, int N, int K) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    long long b = blockIdx.z;
    if (i < M && j < N) {
        const float* a = A + b * M * K;
        const float* bb = B + b * K * N;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += a[i * K + k] * bb[k * N + j];
        C[b * M * N + i * N + j] = acc;
    }
}
