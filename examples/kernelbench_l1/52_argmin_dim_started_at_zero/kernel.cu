// Buggy twin of 52: the running min starts at 0 (with index 0) instead of the first element, so a column of
// positive values keeps index 0 whatever its minimum's index is.
extern "C" __global__ void argmin_dim1(const float* __restrict__ x, long long* __restrict__ y, int B, int M, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * C) {
        int b = idx / C;
        int c = idx % C;
        const float* col = x + (long long)b * M * C + c;
        float best = 0.0f;
        long long arg = 0;
#pragma unroll 1   // unrolled, nvcc writes each lane's index as a widened 32-bit sum, which is not summarised
        for (int m = 0; m < M; ++m) {
            float v = col[(long long)m * C];
            if (v < best) {
                best = v;
                arg = m;
            }
        }
        y[idx] = arg;
    }
}
