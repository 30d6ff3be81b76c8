"""Gathers: elements picked by indices read from an integer tensor (`embedding`, `index_select`, `gather`).

torch raises on an index outside its dim, so the reference has no value there; a term that read the
operand at such an index anyway would be a value torch never computes, and comparing a kernel with it could
refute a correct kernel. So an index here must be a task input's element whose stated value range
(`[tensors] idx = { range = [lo, hi] }`, `semantics/preconditions.py`) lies inside the dim: then every
index the precondition admits is valid, and the term is torch's value for every admitted input. An index
built from such reads and constants by conditionals (nll_loss's `where(target != ignore_index, target, 0)`)
is valid when every value it can take is (`semantics.torch.ranges.interval`). Any other index tensor
(computed, or without a range that fits) is unsupported, naming what to state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from semantics.torch.lazy import Lazy, Unsupported
from semantics.torch.ranges import interval

if TYPE_CHECKING:
    from semantics.torch.ops import Call


def _index(c: Call, term: z3.ExprRef, size: int, what: str) -> z3.BitVecRef:
    """A gathered index as a 64-bit index term, once its precondition is seen to keep it in [0, size)."""
    bounds = interval(c.ranges, term)
    if bounds is None or not 0 <= bounds[0] <= bounds[1] < size:
        raise Unsupported(f"{c.target}: the {what} must be a kernel input with a value range inside [0, {size - 1}] "
                          f"(`[tensors] NAME = {{ range = [0, {size - 1}] }}`: torch raises on any other index)")
    return z3.SignExt(64 - term.size(), term) if term.size() < 64 else term


def _checked(c: Call, indices: Lazy, size: int, what: str) -> Lazy:
    """`indices`, once a symbolic element of it is seen to be a ranged input's (so an unsupported index is
    reported when the op is built, not when a term is: `reference_outputs`)."""
    probe = tuple(z3.BitVec(f"{c.node}!{what}{k}", 64) for k in range(len(indices.shape)))
    _index(c, indices.at(probe), size, what)
    return indices


def _embedding(c: Call) -> Lazy:
    """out[i..., d] = weight[indices[i...], d]."""
    weight, indices = c.tensor("weight"), c.tensor("indices")
    if len(weight.shape) != 2:
        raise Unsupported(f"{c.target} of a {len(weight.shape)}-D weight")
    _checked(c, indices, weight.shape[0], "indices")
    rows = len(indices.shape)
    return Lazy.of(c.shape, weight.dtype, lambda idx: weight.at(
        (_index(c, indices.at(idx[:rows]), weight.shape[0], "indices"), idx[rows])))


def _index_select(c: Call) -> Lazy:
    """out[..., j, ...] = self[..., index[j], ...] along `dim`."""
    source, index = c.tensor("self"), c.tensor("index")
    dim = c.args["dim"] % max(len(source.shape), 1)
    if len(index.shape) != 1:
        raise Unsupported(f"{c.target} with a {len(index.shape)}-D index")
    _checked(c, index, source.shape[dim], "index")
    return Lazy.of(c.shape, source.dtype, lambda idx: source.at(
        idx[:dim] + (_index(c, index.at((idx[dim],)), source.shape[dim], "index"),) + idx[dim + 1:]))


def _gather(c: Call) -> Lazy:
    """out[i] = self[i with its `dim` coordinate replaced by index[i]]."""
    source, index = c.tensor("self"), c.tensor("index")
    dim = c.args["dim"] % max(len(source.shape), 1)
    if len(index.shape) != len(source.shape):
        raise Unsupported(f"{c.target} with an index of another rank")
    _checked(c, index, source.shape[dim], "index")
    return Lazy.of(c.shape, source.dtype, lambda idx: source.at(
        idx[:dim] + (_index(c, index.at(idx), source.shape[dim], "index"),) + idx[dim + 1:]))


GATHER_OPS = {
    "aten.embedding.default": _embedding,
    "aten.index_select.default": _index_select,
    "aten.gather.default": _gather,
}
