// y[i] = x[i] + x[i], but the add is predicated on x[i] > 0 and its register has no earlier value:
// where x[i] <= 0 the stored register holds nothing (a read of an undefined register).
extern "C" __global__ void double_pos(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float r;
        asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %1, 0f00000000;\n\t@p add.f32 %0, %1, %1;\n\t}"
            : "=f"(r) : "f"(v));
        y[i] = r;
    }
}
