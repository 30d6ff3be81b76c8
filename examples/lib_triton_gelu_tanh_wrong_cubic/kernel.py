# BUG: the twin of lib_triton_gelu_tanh with the cubic coefficient 0.0415 instead of 0.0415 (issue 16 item
# 3: the libdevice tanh sequence is recognised; the wrong constant is a wrong value).
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    inner = 0.7978845608028654 * (x + 0.0415 * x * x * x)
    y = 0.5 * x * (1.0 + libdevice.tanh(inner))
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
