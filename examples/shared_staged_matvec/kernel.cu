// y = x W^T for x of 1024 x 256 and W of 256 x 256: one block per row of x stages the row in shared memory,
// then thread t sums x[row, j] W[t, j] over j, reading the staged row in a loop without barriers.
extern "C" __global__ void staged_matvec(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y) {
    __shared__ float xs[256];
    int t = threadIdx.x;
    long long row = blockIdx.x;
    xs[t] = x[row * 256 + t];
    __syncthreads();
    float acc = 0.0f;
    for (int j = 0; j < 256; ++j) acc += xs[j] * w[t * 256 + j];
    y[row * 256 + t] = acc;
}
