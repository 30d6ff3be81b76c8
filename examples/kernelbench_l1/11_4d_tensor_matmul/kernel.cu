// C = einsum('bijl,lk->bijk') as a (b i j) x l times l x k product: one thread per output element C[r, c],
// block 16 x 16. The 1048576 rows exceed grid.y's limit, so rows go on x and the 768 columns on y.
extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                  int M, int N, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(long long)i * K + k] * B[k * N + j];
        C[(long long)i * N + j] = acc;
    }
}
