# BUG: the twin of lib_triton_rsqrt_norm launched with EPS = 1e-3 where the reference adds 1e-5 (issue 16
# item 3: rsqrt.approx is 1/sqrt; the wrong epsilon is a wrong value).
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def rsqrt_norm_kernel(x_ptr, y_ptr, n, EPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * libdevice.rsqrt(x * x + EPS), mask=mask)
