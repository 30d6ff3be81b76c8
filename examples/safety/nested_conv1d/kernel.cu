// Conv1d without padding, y[b, oc, o] = sum over c < C, k < KW of x[b, c, o + k] * w[oc, c, k]: one thread per
// output, a loop over input channels around a loop over the window (both bounds kernel parameters).
extern "C" __global__ void k(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                             int n, int C, int L, int OC, int KW) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    int lout = L - KW + 1;
    int o = idx % lout, oc = idx / lout % OC, b = idx / lout / OC;
    float acc = 0.0f;
    for (int c = 0; c < C; ++c)
        for (int t = 0; t < KW; ++t) acc += x[(b * C + c) * L + o + t] * w[(oc * C + c) * KW + t];
    y[idx] = acc;
}
