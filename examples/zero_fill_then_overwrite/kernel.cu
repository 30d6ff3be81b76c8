// Correct: each block zero-fills its 64-element tile of y, waits at the barrier, then every thread writes
// relu(x) into the element *another* thread zero-filled (the tile reversed). The final value of every
// element is relu(x); the zero is not final, although no thread overwrites its own store.
extern "C" __global__ void zero_then_overwrite(const float* __restrict__ x, float* __restrict__ y) {
    int base = blockIdx.x * 64;
    int t = threadIdx.x;
    y[base + t] = 0.0f;
    __syncthreads();
    int e = base + 63 - t;
    y[e] = fmaxf(x[e], 0.0f);
}
