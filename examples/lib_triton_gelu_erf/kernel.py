# GELU as Liger and the Triton tutorials write it, through tl.math.erf (Triton links libdevice's __nv_erff:
# the sequence is axiom libdevice.erff, issue 16 item 3), over 4096 x 3072 activations.
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)
