// Buggy twin of 12: B read with its strides swapped (B[j, i] for B[i, j]).
extern "C" __global__ void diag_matmul(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int N, int M) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y;
    if (j < M) C[(long long)i * M + j] = A[i] * B[(long long)j * M + i];
}
