#include <cuda_runtime.h>
// Thread 0 of block 0 resets the counter with a plain store while other threads add to it atomically.
extern "C" __global__ void k(int* count) {
    if (blockIdx.x == 0 && threadIdx.x == 0) count[0] = 0;
    else atomicAdd(&count[0], 1);
}
