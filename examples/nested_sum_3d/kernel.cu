// y[b] = sum of the C x H x W block x[b]: one thread per b, three nested loops.
extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ y, int B, int C, int H, int W) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) {
        float acc = 0.0f;
        for (int c = 0; c < C; ++c)
            for (int h = 0; h < H; ++h)
                for (int w = 0; w < W; ++w) acc += x[(((long long)b * C + c) * H + h) * W + w];
        y[b] = acc;
    }
}
