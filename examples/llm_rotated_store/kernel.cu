// y = x + 1, each block's threads rotated: thread t stores element 256·b + (t + 17) % 256. The heuristic
// inverse prover reads `% 256` as a no-op and proposes t = e % 256 - 17, wrong for the first 17 elements
// of each block; an agent's `t = (e % 256 + 239) % 256` is the writer (the core checks it like any hint).
extern "C" __global__ void rotated_add_one(const float* __restrict__ x, float* __restrict__ y) {
    long long i = (long long)blockIdx.x * 256 + (threadIdx.x + 17) % 256;
    y[i] = x[i] + 1.0f;
}
