// Conv2d(16, 128, 3) on 16 x 16 x 1024 x 1024, written as a library would: a 3-D grid (x: output column,
// y: output row, z: batch x output channel), int indices, the (ic, kh, kw) loops left to the compiler.
#define N 16
#define IC 16
#define OC 128
#define H 1024
#define W 1024
#define K 3
#define OH (H - K + 1)
#define OW (W - K + 1)
extern "C" __global__ void conv2d_nchw(const float* __restrict__ x, const float* __restrict__ w,
                                       float* __restrict__ y) {
    int ow = blockIdx.x * blockDim.x + threadIdx.x;
    int oh = blockIdx.y;
    int n = blockIdx.z / OC, oc = blockIdx.z % OC;
    if (ow >= OW) return;
    float acc = 0.0f;
    for (int ic = 0; ic < IC; ++ic)
        for (int kh = 0; kh < K; ++kh)
            for (int kw = 0; kw < K; ++kw)
                acc += x[((n * IC + ic) * H + oh + kh) * W + ow + kw] * w[((oc * IC + ic) * K + kh) * K + kw];
    y[((n * OC + oc) * OH + oh) * OW + ow] = acc;
}
