// scaled_dot_product_attention for Q, K, V of 32 x 32 x 512 x 1024: one block of 512 threads per (b, h, query
// row i). Thread k computes the score (q_i c) . (k_k c), with c the float32 sqrt(1 / sqrt(1024)) by which
// ATen's math attention scales q and k each; shared-memory max and sum trees give the softmax, each thread
// writes its probability p_k = e_k / total; then thread d (strided over the 1024 columns) sums p_k V[k, d]
// over the 512 keys.
#define L 512
#define D 1024
extern "C" __global__ void sdpa(const float* __restrict__ Q, const float* __restrict__ K, const float* __restrict__ V,
                                float* __restrict__ O) {
    __shared__ float p[L];
    __shared__ float red[L];
    int k = threadIdx.x;
    long long head = blockIdx.x / L;
    int i = blockIdx.x % L;
    const float* q = Q + (head * L + i) * D;
    const float* kk = K + (head * L + k) * D;
    float score = 0.0f;
    const float c = 0.17677669529663687f;   // float32(sqrt(1 / sqrt(1024))) = 0x3E3504F3
    for (int d = 0; d < D; ++d) score += (q[d] * c) * (kk[d] * c);
    red[k] = score;
    __syncthreads();
    for (int st = L / 2; st > 0; st >>= 1) {
        if (k < st) red[k] = fmaxf(red[k], red[k + st]);
        __syncthreads();
    }
    float mx = red[0];
    __syncthreads();
    float e = expf(score - mx);
    red[k] = e;
    __syncthreads();
    for (int st = L / 2; st > 0; st >>= 1) {
        if (k < st) red[k] += red[k + st];
        __syncthreads();
    }
    p[k] = e / red[0];
    __syncthreads();
    const float* v = V + head * L * D;
    float* o = O + (head * L + i) * D;
    for (int d = k; d < D; d += L) {
        float acc = 0.0f;
        for (int j = 0; j < L; ++j) acc += p[j] * v[(long long)j * D + d];
        o[d] = acc;
    }
}
