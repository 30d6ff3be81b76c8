// y = x / ||x||_F over all 112 * 64 * 512 * 512 elements in one launch: a grid-wide sum cannot be read back
// without a second kernel, so one block of 1024 threads sums every square (strided), reduces the partial
// sums through a shared-memory tree, and then scales every element.
#define BS 1024
extern "C" __global__ void frobenius_norm(const float* __restrict__ x, float* __restrict__ y, long long n) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (long long i = t; i < n; i += BS) acc += x[i] * x[i];
    s[t] = acc;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    float norm = sqrtf(s[0]);
    for (long long i = t; i < n; i += BS) y[i] = x[i] / norm;
}
