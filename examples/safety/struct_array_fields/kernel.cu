#include <cuda_runtime.h>
// An array of structs of scalars in global memory: each thread reads its own struct's two fields.
struct Pair { float a; float b; };
extern "C" __global__ void k(const Pair* ps, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = ps[i].a * ps[i].b;
}
