// out[0] = sum(x), but every thread of every block does a plain read-modify-write of out[0].
extern "C" __global__ void total_sum_racy(const float* __restrict__ x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[0] += x[i];               // BUG: should be atomicAdd(out, x[i])
}
