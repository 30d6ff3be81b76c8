# An activation chosen by a string constexpr and an optional scale left None, as autotuned libraries
# (Liger, the Triton tutorials) write them: the manifest gives ACT = "relu" and SCALE = "None".
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, y_ptr, n, ACT: tl.constexpr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if ACT == "relu":
        y = tl.maximum(x, 0.0)
    else:
        y = tl.where(x > 0, x, 0.01 * x)
    if SCALE is not None:
        y = y * SCALE
    tl.store(y_ptr + offs, y, mask=mask)
