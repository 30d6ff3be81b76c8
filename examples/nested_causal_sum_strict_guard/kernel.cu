// y[b] = sum of the lower triangle (w <= h) of x[b]. Bug: the guard is w < h, dropping the diagonal.
extern "C" __global__ void causal_sum(const float* __restrict__ x, float* __restrict__ y, int B, int H, int W) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) {
        float acc = 0.0f;
        for (int h = 0; h < H; ++h)
            for (int w = 0; w < W; ++w)
                if (w < h) acc += x[((long long)b * H + h) * W + w];
        y[b] = acc;
    }
}
