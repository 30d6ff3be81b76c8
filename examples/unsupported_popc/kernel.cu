// Scales x by the number of set bits of a runtime mask: with mask = 3 (two bits) this is y = 2 * x, so the
// kernel is correct, but its value goes through __popc (popc.b32), which LARK does not model yet.
extern "C" __global__ void scale_by_popc(const float* __restrict__ x, float* __restrict__ y,
                                         unsigned int mask, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i] * (float)__popc(mask);
    }
}
