// y = 2·x, each block writing its 256 elements in reverse thread order: thread t stores element
// 256·b + 255 - t. The heuristic inverse prover reads only positive coefficients, so it proposes no writer
// and coverage stays open; an agent's `tx = 255 - e % 256` closes it (the core checks it like any hint).
extern "C" __global__ void mirrored_scale(const float* __restrict__ x, float* __restrict__ y) {
    long long i = (long long)blockIdx.x * 256 + 255 - threadIdx.x;
    y[i] = 2.0f * x[i];
}
