// y = A v for A of 2048 x 1048576: one block of 256 threads per row, a strided partial dot product per
// thread, then a shared-memory tree sum.
#define BS 256
extern "C" __global__ void matvec(const float* __restrict__ A, const float* __restrict__ v, float* __restrict__ y,
                                  int K) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = A + (long long)blockIdx.x * K;
    float acc = 0.0f;
    for (int k = t; k < K; k += BS) acc += row[k] * v[k];
    s[t] = acc;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
