# BUG: the twin of lib_triton_gelu_erf that scales by 1/sqrt(3) instead of 1/sqrt(2) inside erf (issue 16
# item 3: the libdevice erf sequence is recognised; the wrong constant is a wrong value).
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.5773502691896258))
    tl.store(y_ptr + offs, y, mask=mask)
