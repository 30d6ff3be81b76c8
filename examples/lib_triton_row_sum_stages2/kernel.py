# A row sum as Triton pipelines it (issue 16 item 7): `tl.range(..., num_stages=2)` loads each block of
# columns with cp.async one iteration ahead and reads it back through ldmatrix. Today unknown: ldmatrix's
# values and a shared value carried to the next iteration are not modelled (docs/triton_pipelining.md).
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=2):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))
