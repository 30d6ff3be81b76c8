// llm.c / Liger style: optional side outputs and an optional bias. One block of 256 threads per row: a strided
// sum and a shared-memory tree for the row mean; `mean` is written only when the caller passes a buffer, and
// `bias` is added only when one is passed (PTX compares each pointer parameter with 0).
#define BS 256
extern "C" __global__ void row_center(const float* __restrict__ x, const float* __restrict__ bias,
                                      float* __restrict__ y, float* __restrict__ mean, int cols) {
    __shared__ float s[BS];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float sum = 0.0f;
    for (int c = t; c < cols; c += BS) sum += row[c];
    s[t] = sum;
    __syncthreads();
    for (int st = BS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    float m = s[0] / cols;
    if (mean != nullptr && t == 0) mean[blockIdx.x] = m;
    for (int c = t; c < cols; c += BS) out[c] = row[c] - m + (bias != NULL ? bias[c] : 0.0f);
}
