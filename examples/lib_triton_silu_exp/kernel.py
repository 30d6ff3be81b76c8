# SiLU (Liger's swiglu gate, x * sigmoid(x)) through libdevice.exp (Triton links __nv_expf: axiom
# libdevice.expf, issue 16 item 3), 4096 x 11008 activations, a block of 2048 per program.
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x / (1.0 + libdevice.exp(-x))
    tl.store(y_ptr + offs, y, mask=mask)
