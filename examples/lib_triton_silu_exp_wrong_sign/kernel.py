# BUG: the twin of lib_triton_silu_exp that divides by 1 + exp(x) instead of 1 + exp(-x) (issue 16 item 3:
# the libdevice exp sequence is recognised; the sign is a wrong value).
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x / (1.0 + libdevice.exp(x))
    tl.store(y_ptr + offs, y, mask=mask)
