// Each thread of a block sums the block's whole row from shared memory: a loop without barriers reading what
// every thread of the block stored before the barrier (its reads resolved offset by offset to their writers).
extern "C" __global__ void row_total(const float* __restrict__ x, float* __restrict__ y) {
    __shared__ float s[256];
    int t = threadIdx.x;
    long long row = blockIdx.x;
    s[t] = x[row * 256 + t];
    __syncthreads();
    float acc = 0.0f;
    for (int j = 0; j < 256; ++j) acc += s[j & 254];   // bug: 255 masked with 254, not 255
    y[row * 256 + t] = acc;
}
