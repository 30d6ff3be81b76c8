// y = 3·x over a 64 x 64 matrix, block b writing row 63 - b (the blocks walk the rows bottom up). The
// heuristic inverse prover reads only positive coefficients, so it proposes no writer of an element and
// coverage stays open; an agent's `ctaid.x = 63 - e / 64` closes it (the core checks it like any hint).
extern "C" __global__ void flipped_rows_scale(const float* __restrict__ x, float* __restrict__ y) {
    long long i = (63LL - blockIdx.x) * 64 + threadIdx.x;
    y[i] = 3.0f * x[i];
}
