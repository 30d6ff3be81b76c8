# x / sqrt(x^2 + eps) through libdevice.rsqrt (Triton compiles it, and tl.math.rsqrt, to one
# rsqrt.approx.ftz.f32: axiom rsqrt.approx; nvcc's rsqrtf is rsqrt.approx.f32), issue 16 item 3.
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def rsqrt_norm_kernel(x_ptr, y_ptr, n, EPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * libdevice.rsqrt(x * x + EPS), mask=mask)
