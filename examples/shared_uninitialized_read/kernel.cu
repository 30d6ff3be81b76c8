// y = x block by block through shared memory, but only threads 0..63 fill s[]; threads 64..127 read
// s[64..127], which no thread of the block ever wrote.
#define BS 128
extern "C" __global__ void copy_via_shared(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    int i = blockIdx.x * BS + t;             // n is a multiple of BS: every i is in bounds
    if (t < 64) s[t] = x[i];                 // BUG: should be every t < BS
    __syncthreads();
    y[i] = s[t];
}
