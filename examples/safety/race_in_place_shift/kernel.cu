#include <cuda_runtime.h>
// The same shift in place: thread i reads a[i + 1] while thread i + 1 overwrites it.
extern "C" __global__ void k(float* a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] = a[(i + 1) % 1024];
}
