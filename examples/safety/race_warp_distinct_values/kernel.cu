#include <cuda_runtime.h>
// One warp; every lane stores its own lane id to out[0]: the lanes write different values.
extern "C" __global__ void k(int* out) {
    out[0] = threadIdx.x;
}
