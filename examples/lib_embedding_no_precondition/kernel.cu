// One block per token; thread c copies channel c (and c + 256, c + 512) of the token's embedding row.
extern "C" __global__ void embedding_lookup(const long long* idx, const float* wte, float* out, int tokens, int channels) {
    int t = blockIdx.x;
    if (t >= tokens) return;
    long long row = idx[t];
    for (int c = threadIdx.x; c < channels; c += blockDim.x) {
        out[(long long)t * channels + c] = wte[row * channels + c];
    }
}
