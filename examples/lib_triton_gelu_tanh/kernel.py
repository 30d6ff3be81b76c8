# GELU's tanh approximation (GPT-2's, as llm.c and Liger write it) through libdevice.tanh (Triton links
# __nv_tanhf: axiom libdevice.tanhf, issue 16 item 3), 2-D launch over 8192 x 768 with a 64-bit offset.
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + libdevice.tanh(inner))
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
