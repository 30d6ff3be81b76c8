// y[r] = sum over c of x[r, c]: one thread per row, a 100000-long loop.
extern "C" __global__ void row_sum_thread(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) acc += x[r * cols + c];
        y[r] = acc;
    }
}
