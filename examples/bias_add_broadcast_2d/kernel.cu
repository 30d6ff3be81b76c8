// y[r, c] = x[r, c] + b[c] over a rows x cols row-major matrix; x (threadIdx.x) runs along columns.
extern "C" __global__ void bias_add(const float* __restrict__ x, const float* __restrict__ b,
                                    float* __restrict__ y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        y[r * cols + c] = x[r * cols + c] + b[c];
    }
}
