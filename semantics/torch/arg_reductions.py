"""argmax / argmin: the index of the first extremum along one dim, an int64 tensor (`semantics.arg_extrema`).

Element idx of argmax(x, dim) over a dim of size n is ArgMaxFrom(x[.., 0, ..], 0, 1, n - 1, λt. x[.., 1 + t, ..])
(the index component of the fold from (x at coordinate 0, index 0) over coordinates 1..n-1, recording
1 + t): the first coordinate attaining the max, which is torch's answer on ties. argmin likewise with
ArgMinFrom. A dim of size 1 gives 0. Floats are exact reals (no NaN, which torch would rank first); the
operand must be a float tensor. Reducing all dims (dim=None) flattens the tensor; it is modelled only for
a tensor with one dim of size > 1 (the flat index is then that dim's coordinate), else unsupported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import z3

from semantics.arg_extrema import arg_over
from semantics.torch.graph import FLOAT_DTYPES
from semantics.torch.lazy import Index, Lazy, Unsupported, bv

if TYPE_CHECKING:
    from semantics.torch.ops import Call

__all__ = ["ARG_OPS"]


def _dim(c: Call, shape: tuple[int, ...]) -> int | None:
    """The reduced dim (non-negative), or None for a tensor with no dim of size > 1 (every index 0)."""
    dim = c.args.get("dim")
    if dim is None:
        wide = [d for d, n in enumerate(shape) if n > 1]
        if len(wide) > 1:
            raise Unsupported(f"{c.target} over all dims of a tensor of shape {list(shape)} (a flattened index)")
        return wide[0] if wide else None
    if not -len(shape) <= dim < max(len(shape), 1):
        raise Unsupported(f"{c.target}: dim {dim} of a rank-{len(shape)} tensor")
    return dim % len(shape) if shape else None


def _arg(kind: str) -> Callable[[Call], Lazy]:
    def op(c: Call) -> Lazy:
        x = c.tensor("self")
        if x.dtype not in FLOAT_DTYPES or c.dtype != "int64":
            raise Unsupported(f"{c.target} of a {x.dtype} tensor with result {c.dtype}")
        if 0 in x.shape:
            raise Unsupported(f"{c.target} of an empty tensor")
        dim, keepdim, flat = _dim(c, x.shape), bool(c.args.get("keepdim", False)), c.args.get("dim") is None
        if flat:
            out_shape = (1,) * len(x.shape) if keepdim else ()
        else:
            out_shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape) if keepdim or d != dim)

        def full(idx: Index, at: z3.BitVecRef) -> Index:
            """The operand index of output idx with the reduced coordinate `at` (the others 0 when flat)."""
            if flat:
                return tuple(at if d == dim else bv(0) for d in range(len(x.shape)))
            rest, out = iter(idx), []
            for d in range(len(x.shape)):
                kept = next(rest) if keepdim or d != dim else None   # with keepdim, idx has the dim's 0 too
                out.append(at if d == dim else kept)
            return tuple(out)

        def element(idx: Index) -> z3.ExprRef:
            n = x.shape[dim] if dim is not None else 1
            if n == 1:
                return bv(0)
            t = z3.BitVec(f"{c.node}!t", 64)
            return arg_over(kind, x.at(full(idx, bv(0))), bv(0), bv(1), bv(n - 1), t, x.at(full(idx, t + 1)))
        return Lazy.of(out_shape, "int64", element)
    return op


ARG_OPS: dict[str, Callable[[Call], Lazy]] = {
    "aten.argmax.default": _arg("argmax"),
    "aten.argmin.default": _arg("argmin"),
}
