// Bug: the index is a 32-bit int although the tensor has more than 2^31 elements. blockIdx.x * blockDim.x
// is computed in 32 bits, so for blockIdx.x >= 2^31 / 256 = 8388608 the index wraps to a negative int;
// the guard compares it (sign-extended) against the 64-bit n, passes, and x[i] / y[i] are accessed at a
// negative offset. Elements at 2^31 and beyond are never written.
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
