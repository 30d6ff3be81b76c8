// One block of 256 threads per row: each thread sums a strided slice of the row, then a shared-memory
// tree halves the partial sums until s[0] holds the row's total.
#define BS 256
extern "C" __global__ void row_sum_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = t; c < cols; c += BS) acc += row[c];
    s[t] = acc;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
