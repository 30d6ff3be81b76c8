// One block of 256 threads per row: each thread takes the max of a strided slice of the row, then a
// shared-memory tree of fmaxf leaves the row's max in s[0].
#define BS 256
extern "C" __global__ void row_max_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float m = row[t];                       // cols >= BS
    for (int c = t + BS; c < cols; c += BS) m = fmaxf(m, row[c]);
    s[t] = m;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] = fmaxf(s[t], s[t + st]);
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
