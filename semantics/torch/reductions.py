"""Reductions, contractions, scans and normalizations: the ATen ops whose elements are comprehensions.

An element of a reduction is a `Sum` / `MaxFrom` / `MinFrom` comprehension (`semantics.comprehension`)
whose body is the operand's element at the output index, the reduced coordinate replaced by the bound
variable. Conventions the kernel side relies on:

* Several reduced dims nest, the first reduced dim outermost. A reduced dim of size 1 is no comprehension:
  its coordinate is the constant 0. Reducing an empty dim is unsupported.
* max/min start from the element at coordinate 0 and range over 1..n-1 (no infinity is needed):
  amax(x) over n = MaxFrom(x[0], 1, n, λj. x[j]); over several dims the init is the inner max at 0.
* mean = Σ / n and var = Σ (x - mean)² / (n - correction), with n and the correction exact reals and the
  square a product; std = sqrt(var); rstd = 1 / sqrt(var + eps) (biased var, as layer/batch/group norm).
* mm/bmm/mv/dot: element (i, j) = Σ_k A[i, k] * B[k, j] (a contraction of length 1 is the product);
  addmm/baddbmm: alpha * Σ + beta * self, factors of 1 left out, self ignored when beta = 0 (as torch).
* softmax = exp(x - m) / Σ_j exp(x_j - m) and log_softmax = (x - m) - log Σ_j exp(x_j - m), m the row max.
* cumsum: element i is Σ_{0 ≤ j < i+1} x_j; cumprod: element i is Π_{0 ≤ j < i+1} x_j (a `Prod`).
* Results are float (exact reals): a reduction with an integer or bool result is unsupported (the sums
  are over reals), except an integer sum of one constant summand (count · v); bool and integer operands
  converted to a float result are fine.

Bound variables are 64-bit constants named after the graph node and their role (`sum_1!r1`: node sum_1,
reduced dim 1), so the terms are identical in every run (obligation texts are hashed into certificates)
and two comprehensions that nest never share a variable: a body only holds nodes earlier in the graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import z3

from semantics.axioms import ideal
from semantics.comprehension import max_over, min_over, prod_over, sum_over
from semantics.torch import lazy
from semantics.torch.graph import FLOAT_DTYPES, INT_WIDTHS
from semantics.torch.lazy import Index, Lazy, Missing, Unsupported, bv

if TYPE_CHECKING:
    from semantics.torch.ops import Call

__all__ = ["REDUCTION_OPS", "float_operand"]

Coords = tuple[z3.BitVecRef, ...]
Body = Callable[[Coords], z3.ExprRef]


# ---- comprehensions over a box of coordinates ----------------------------------------------------------

def _bound(c: Call, tag: str) -> z3.BitVecRef:
    return z3.BitVec(f"{c.node}!{tag}", 64)


def sum_box(sizes: Sequence[int], names: Sequence[str], body: Body) -> z3.ExprRef:
    """Σ over the box `sizes` (nested, first coordinate outermost) of body(coordinates)."""
    def go(k: int, coords: Coords) -> z3.ExprRef:
        if k == len(sizes):
            return body(coords)
        if sizes[k] == 1:
            return go(k + 1, coords + (bv(0),))
        j = z3.BitVec(names[k], 64)
        return sum_over(0, sizes[k], j, go(k + 1, coords + (j,)))
    return go(0, ())


def extreme_box(which: str, sizes: Sequence[int], names: Sequence[str], body: Body) -> z3.ExprRef:
    """max (or min) over the box: per coordinate, MaxFrom(inner at 0, 1, n, λj. inner at j)."""
    over = max_over if which == "max" else min_over

    def go(k: int, coords: Coords) -> z3.ExprRef:
        if k == len(sizes):
            return body(coords)
        first = go(k + 1, coords + (bv(0),))
        if sizes[k] == 1:
            return first
        j = z3.BitVec(names[k], 64)
        return over(first, 1, sizes[k], j, go(k + 1, coords + (j,)))
    return go(0, ())


def _square(x: z3.ExprRef) -> z3.ExprRef:
    return x * x


def _abs(x: z3.ExprRef) -> z3.ExprRef:
    return z3.If(x >= 0, x, -x)


def _div(x: z3.ExprRef, n: Fraction) -> z3.ExprRef:
    return x if n == 1 else x / z3.RealVal(n)


# ---- which dims, and how an output index and reduction coordinates make an operand index ---------------

@dataclass(frozen=True)
class Along:
    """Reduction of a tensor of `shape` over `dims` (sorted, non-negative). An output index has the rank
    of the result: without keepdim the reduced positions are absent, with keepdim they are there and
    ignored (so a full-rank index of the operand also works: softmax and norms use that)."""

    shape: tuple[int, ...]
    dims: tuple[int, ...]
    keepdim: bool

    @staticmethod
    def of(what: str, shape: Sequence[int], dim: Any, keepdim: bool, empty_is_all: bool = True) -> Along:
        """`dim` as ATen gives it: an int, a list, or None for all dims; [] is all dims too, except in
        any.dims / all.dims (empty_is_all=False), where it reduces none."""
        rank = len(shape)
        if dim is None or (dim == [] and empty_is_all):
            dims = list(range(rank))
        else:
            dims = [dim] if isinstance(dim, int) else list(dim)
        if rank == 0:   # a 0-d tensor reduces over nothing (dim 0 and -1 are allowed)
            if any(d not in (0, -1) for d in dims):
                raise Unsupported(f"{what}: dim {dim} of a 0-d tensor")
            return Along((), (), bool(keepdim))
        if any(not -rank <= d < rank for d in dims):
            raise Unsupported(f"{what}: dim {dim} of a rank-{rank} tensor")
        along = Along(tuple(shape), tuple(sorted({d % rank for d in dims})), bool(keepdim))
        if 0 in along.sizes:
            raise Unsupported(f"{what}: reduction over an empty dimension")
        return along

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.shape[d] for d in self.dims)

    @property
    def count(self) -> int:
        return math.prod(self.sizes)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(1 if d in self.dims else n for d, n in enumerate(self.shape)
                     if self.keepdim or d not in self.dims)

    def index(self, out: Index, coords: Coords) -> Index:
        rest, by_dim = iter(out), dict(zip(self.dims, coords, strict=True))
        full = []
        for d in range(len(self.shape)):
            if d in by_dim:
                if self.keepdim:
                    next(rest)
                full.append(by_dim[d])
            else:
                full.append(next(rest))
        return tuple(full)

    def names(self, c: Call, tag: str) -> list[str]:
        return [f"{c.node}!{tag}{d}" for d in self.dims]

    # the statistics of the operand x at output index `out`
    def total(self, c: Call, tag: str, x: Lazy, out: Index, fn: Callable = lambda v: v) -> z3.ExprRef:
        return sum_box(self.sizes, self.names(c, tag), lambda cs: fn(x.at(self.index(out, cs))))

    def extreme(self, c: Call, which: str, tag: str, x: Lazy, out: Index,
                fn: Callable = lambda v: v) -> z3.ExprRef:
        return extreme_box(which, self.sizes, self.names(c, tag), lambda cs: fn(x.at(self.index(out, cs))))

    def mean(self, c: Call, tag: str, x: Lazy, out: Index) -> z3.ExprRef:
        return _div(self.total(c, tag, x, out), Fraction(self.count))

    def var(self, c: Call, tags: tuple[str, str], x: Lazy, out: Index, divisor: Fraction) -> z3.ExprRef:
        """Σ (x - mean)² / divisor, the mean a comprehension of its own (tags: mean's, the sum's)."""
        m = self.mean(c, tags[0], x, out)
        return _div(self.total(c, tags[1], x, out, lambda v: _square(v - m)), divisor)


def float_operand(c: Call, name: str = "self") -> Lazy:
    """A tensor argument as a tensor of the (float) result dtype, converted elementwise; an integer or bool
    result is not modelled (sums, maxima and means are over reals)."""
    if c.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{c.target} with result dtype {c.dtype} (reductions are modelled over floats)")
    t = c.tensor(name)
    return t if t.dtype == c.dtype else lazy.elementwise(lambda v: v, [t], t.shape, c.dtype)


def _stat(shape: Sequence[int], dtype: str, fn: Callable[[Index], z3.ExprRef]) -> Lazy:
    return Lazy.of(shape, dtype, fn)


# ---- sum, mean, max, min, var, std, norms, any/all ---------------------------------------------------

def _sum(c: Call) -> Lazy:
    if c.dtype in INT_WIDTHS:
        return _constant_sum(c)
    x = float_operand(c)
    along = Along.of(c.target, x.shape, c.args.get("dim"), c.args.get("keepdim", False))
    return _stat(along.out_shape, c.dtype, lambda idx: along.total(c, "r", x, idx))


def _constant_sum(c: Call) -> Lazy:
    """An integer sum whose summand has one value v at every element for every admitted input (nll_loss's
    count of counted targets, each test settled by the targets' stated range: `semantics.torch.ranges`):
    count · v, wrapped to the result's width as torch's integer sum wraps. Any other integer sum is
    unsupported (sums are comprehensions over reals)."""
    t = c.tensor("self")
    along = Along.of(c.target, t.shape, c.args.get("dim"), c.args.get("keepdim", False))
    probe = tuple(z3.BitVec(f"{c.node}!probe{k}", 64) for k in range(len(t.shape)))
    element = z3.simplify(lazy.converter(t.dtype, c.dtype)(t.at(probe)))
    if not z3.is_bv_value(element):
        raise Unsupported(f"{c.target} with result dtype {c.dtype} of a summand that varies (integer sums are "
                          f"modelled only where each summand is one constant)")
    total = z3.BitVecVal(element.as_long() * along.count, INT_WIDTHS[c.dtype])
    return lazy.constant(total, along.out_shape, c.dtype)


def _mean(c: Call) -> Lazy:
    x = float_operand(c)
    along = Along.of(c.target, x.shape, c.args.get("dim"), c.args.get("keepdim", False))
    return _stat(along.out_shape, c.dtype, lambda idx: along.mean(c, "r", x, idx))


def _extreme(which: str, indices: bool = False) -> Callable[[Call], Any]:
    """amax/amin (dims, keepdim), max.default/min.default (all dims), and max.dim/min.dim, whose second
    result (the indices) is not modelled."""
    def op(c: Call) -> Any:
        x = float_operand(c)
        along = Along.of(c.target, x.shape, c.args.get("dim"), c.args.get("keepdim", False))
        values = _stat(along.out_shape, c.dtype, lambda idx: along.extreme(c, which, "r", x, idx))
        return (values, Missing(f"{c.target}: the indices result is not modelled")) if indices else values
    return op


def _correction(c: Call) -> Fraction:
    if "unbiased" in c.args:        # var.dim / var.default / std.dim
        return Fraction(1 if c.args["unbiased"] else 0)
    value = c.args.get("correction")
    return Fraction(1) if value is None else Fraction(value)


def _divisor(c: Call, along: Along) -> Fraction:
    divisor = Fraction(along.count) - _correction(c)
    if divisor <= 0:
        raise Unsupported(f"{c.target}: {along.count} elements with correction {_correction(c)} (no finite "
                          f"result)")
    return divisor


def _var(result: str) -> Callable[[Call], Any]:
    """var / std (result 'var', 'std'), var_mean / std_mean ('var_mean', 'std_mean': (var or std, mean))."""
    def op(c: Call) -> Any:
        x = float_operand(c)
        along = Along.of(c.target, x.shape, c.args.get("dim"), c.args.get("keepdim", False))
        divisor = _divisor(c, along)

        def spread(idx: Index) -> z3.ExprRef:
            v = along.var(c, ("m", "v"), x, idx, divisor)
            return ideal("sqrt")(v) if result.startswith("std") else v
        first = _stat(along.out_shape, c.dtype, spread)
        if not result.endswith("_mean"):
            return first
        return first, _stat(along.out_shape, c.dtype, lambda idx: along.mean(c, "m", x, idx))
    return op


def _vector_norm(c: Call) -> Lazy:
    """linalg_vector_norm for ord 1, 2, inf, -inf."""
    x = float_operand(c)
    along = Along.of(c.target, x.shape, c.args.get("dim"), c.args.get("keepdim", False))
    order = c.args["ord"]
    if order == 2:
        return _stat(along.out_shape, c.dtype, lambda idx: ideal("sqrt")(along.total(c, "r", x, idx, _square)))
    if order == 1:
        return _stat(along.out_shape, c.dtype, lambda idx: along.total(c, "r", x, idx, _abs))
    if order in (math.inf, -math.inf):
        which = "max" if order > 0 else "min"
        return _stat(along.out_shape, c.dtype, lambda idx: along.extreme(c, which, "r", x, idx, _abs))
    raise Unsupported(f"{c.target} with ord={order!r}")


def _any_all(which: str) -> Callable[[Call], Lazy]:
    """any = Σ [b] > 0, all = Σ [not b] = 0 (exact counts over a non-empty range); a body that simplifies
    to a constant whatever the reduction coordinates are gives that constant."""
    def op(c: Call) -> Lazy:
        if c.dtype != "bool":
            raise Unsupported(f"{c.target} with result dtype {c.dtype}")
        t = c.tensor("self")
        b = t if t.dtype == "bool" else lazy.elementwise(lambda v: v, [t], t.shape, "bool")
        along = Along.of(c.target, b.shape, c.args.get("dim"), c.args.get("keepdim", False),
                         empty_is_all=not c.target.endswith(".dims"))
        one, zero = z3.RealVal(1), z3.RealVal(0)

        def at(idx: Index) -> z3.ExprRef:
            coords = tuple(bv(0) if n == 1 else z3.BitVec(name, 64)
                           for n, name in zip(along.sizes, along.names(c, "r"), strict=True))
            probe = z3.simplify(b.at(along.index(idx, coords)))
            if z3.is_true(probe) or z3.is_false(probe):
                return probe
            if which == "any":
                return along.total(c, "r", b, idx, lambda v: z3.If(v, one, zero)) > 0
            return along.total(c, "r", b, idx, lambda v: z3.If(v, zero, one)) == 0
        return _stat(along.out_shape, "bool", at)
    return op


# ---- contractions ------------------------------------------------------------------------------------

def _contract(c: Call, length: int, pair: Callable[[Index, z3.BitVecRef], tuple[z3.ExprRef, z3.ExprRef]],
              idx: Index) -> z3.ExprRef:
    """Σ_{k < length} a * b for (a, b) = pair(idx, k); a contraction of length 1 is the product at 0."""
    if length == 1:
        a, b = pair(idx, bv(0))
        return a * b
    k = _bound(c, "k")
    a, b = pair(idx, k)
    return sum_over(0, length, k, a * b)


def _matmul_shapes(c: Call, a: Lazy, b: Lazy, rank: int) -> int:
    if len(a.shape) != rank or len(b.shape) != rank or a.shape[-1] != b.shape[-2] or a.shape[:-2] != \
            b.shape[:-2]:
        raise Unsupported(f"{c.target} of shapes {list(a.shape)} and {list(b.shape)}")
    if a.shape[-1] == 0:
        raise Unsupported(f"{c.target}: contraction over an empty dimension")
    return a.shape[-1]


def _product(c: Call, a: Lazy, b: Lazy, rank: int) -> Lazy:
    """mm (rank 2) / bmm (rank 3): element (…, i, j) = Σ_k a[…, i, k] * b[…, k, j]."""
    length = _matmul_shapes(c, a, b, rank)
    shape = a.shape[:-1] + b.shape[-1:]
    return Lazy.of(shape, c.dtype, lambda idx: _contract(
        c, length, lambda ix, k: (a.at(ix[:-1] + (k,)), b.at(ix[:-2] + (k, ix[-1]))), idx))


def _mm(rank: int) -> Callable[[Call], Lazy]:
    def op(c: Call) -> Lazy:
        return _product(c, float_operand(c, "self"), float_operand(c, "mat2"), rank)
    return op


def _addmm(names: tuple[str, str], rank: int) -> Callable[[Call], Lazy]:
    """addmm (mat1, mat2) / baddbmm (batch1, batch2): alpha * (a @ b) + beta * self."""
    def op(c: Call) -> Lazy:
        prod = _product(c, float_operand(c, names[0]), float_operand(c, names[1]), rank)
        beta, alpha = c.args.get("beta", 1), c.args.get("alpha", 1)
        k_beta, k_alpha = c.const(beta, c.dtype), c.const(alpha, c.dtype)
        if beta == 0:
            return Lazy.of(prod.shape, c.dtype, lambda idx: prod.at(idx) if alpha == 1 else k_alpha * prod.at(idx))
        bias = lazy.expand(float_operand(c, "self"), prod.shape)

        def at(idx: Index) -> z3.ExprRef:
            p = prod.at(idx) if alpha == 1 else k_alpha * prod.at(idx)
            return p + (bias.at(idx) if beta == 1 else k_beta * bias.at(idx))
        return Lazy.of(prod.shape, c.dtype, at)
    return op


def _mv(c: Call) -> Lazy:
    a, v = float_operand(c, "self"), float_operand(c, "vec")
    if len(a.shape) != 2 or v.shape != a.shape[1:] or a.shape[1] == 0:
        raise Unsupported(f"{c.target} of shapes {list(a.shape)} and {list(v.shape)}")
    return Lazy.of(a.shape[:1], c.dtype, lambda idx: _contract(
        c, a.shape[1], lambda ix, k: (a.at((ix[0], k)), v.at((k,))), idx))


def _dot(c: Call) -> Lazy:
    a, b = float_operand(c, "self"), float_operand(c, "tensor")
    if len(a.shape) != 1 or a.shape != b.shape or a.shape[0] == 0:
        raise Unsupported(f"{c.target} of shapes {list(a.shape)} and {list(b.shape)}")
    return Lazy.of((), c.dtype, lambda idx: _contract(c, a.shape[0], lambda ix, k: (a.at((k,)), b.at((k,))), idx))


# ---- scans -------------------------------------------------------------------------------------------

def _scan(over: Callable[..., z3.ExprRef]) -> Callable[[Call], Lazy]:
    """cumsum (over = sum_over) / cumprod (prod_over): element i along dim is the comprehension over the
    prefix [0, i + 1); a 0-d tensor or a dim of size 1 is its own scan."""
    def op(c: Call) -> Lazy:
        x = float_operand(c)
        if not x.shape:
            return x
        dim = c.args["dim"] % len(x.shape)
        if x.shape[dim] <= 1:
            return x
        j = _bound(c, f"r{dim}")

        def at(idx: Index) -> z3.ExprRef:
            return over(0, idx[dim] + bv(1), j, x.at(idx[:dim] + (j,) + idx[dim + 1:]))
        return Lazy.of(x.shape, c.dtype, at)
    return op


# ---- softmax and normalizations ----------------------------------------------------------------------

def _softmax(log: bool) -> Callable[[Call], Lazy]:
    def op(c: Call) -> Lazy:
        x = float_operand(c)
        along = Along.of(c.target, x.shape, c.args["dim"], True)
        exp, ln = ideal("exp"), ideal("log")

        def at(idx: Index) -> z3.ExprRef:
            m = along.extreme(c, "max", "m", x, idx)
            s = along.total(c, "s", x, idx, lambda v: exp(v - m))
            return (x.at(idx) - m) - ln(s) if log else exp(x.at(idx) - m) / s
        return Lazy.of(x.shape, c.dtype, at)
    return op


def _normalize(c: Call, x: Lazy, along: Along, eps: z3.ExprRef, idx: Index) -> tuple[z3.ExprRef, z3.ExprRef]:
    """(mean, rstd) of the group of idx: rstd = 1 / sqrt(biased var + eps)."""
    mean = along.mean(c, "m", x, idx)
    var = along.var(c, ("m", "v"), x, idx, Fraction(along.count))
    return mean, 1 / ideal("sqrt")(var + eps)


def _affine(c: Call, x: Lazy, stats: Callable[[Index], tuple[z3.ExprRef, z3.ExprRef]],
            where: Callable[[Index], Index]) -> Lazy:
    """(x - mean) * rstd [* weight] [+ bias], weight and bias read at where(idx)."""
    weight, bias = (c.args.get(n) for n in ("weight", "bias"))
    w = None if weight is None else float_operand(c, "weight")
    b = None if bias is None else float_operand(c, "bias")

    def at(idx: Index) -> z3.ExprRef:
        mean, rstd = stats(idx)
        y = (x.at(idx) - mean) * rstd
        if w is not None:
            y = y * w.at(where(idx))
        return y if b is None else y + b.at(where(idx))
    return Lazy.of(x.shape, c.dtype, at)


def _layer_norm(c: Call) -> tuple[Lazy, Lazy, Lazy]:
    """native_layer_norm: (out, mean, rstd) over the trailing normalized_shape dims."""
    x = float_operand(c, "input")
    norm = tuple(c.args["normalized_shape"])
    axis = len(x.shape) - len(norm)
    if axis < 0 or x.shape[axis:] != norm:
        raise Unsupported(f"{c.target}: normalized_shape {list(norm)} of shape {list(x.shape)}")
    along = Along.of(c.target, x.shape, list(range(axis, len(x.shape))), True)
    eps = c.const(c.args["eps"], c.dtype)
    out = _affine(c, x, lambda idx: _normalize(c, x, along, eps, idx), lambda idx: idx[axis:])
    stat_shape = x.shape[:axis] + (1,) * len(norm)
    return (out, Lazy.of(stat_shape, c.dtype, lambda idx: _normalize(c, x, along, eps, idx)[0]),
            Lazy.of(stat_shape, c.dtype, lambda idx: _normalize(c, x, along, eps, idx)[1]))


def _batch_norm(c: Call) -> tuple[Any, ...]:
    """_native_batch_norm_legit{,_functional,_no_training,.no_stats}: per channel (dim 1), batch statistics
    over every other dim in training, the running ones otherwise. Results: out, save_mean, save_rstd
    (training only), and the updated running statistics (not modelled)."""
    x = float_operand(c, "input")
    if len(x.shape) < 2:
        raise Unsupported(f"{c.target} of shape {list(x.shape)}")
    training = c.args.get("training", c.target != "aten._native_batch_norm_legit_no_training.default")
    eps = c.const(c.args["eps"], c.dtype)
    if training:
        along = Along.of(c.target, x.shape, [d for d in range(len(x.shape)) if d != 1], True)
        out = _affine(c, x, lambda idx: _normalize(c, x, along, eps, idx), lambda idx: idx[1:2])

        def channel(idx: Index) -> Index:     # a (C,) statistics index as an index of x
            return (bv(0),) + tuple(idx) + (bv(0),) * (len(x.shape) - 2)
        mean = Lazy.of(x.shape[1:2], c.dtype, lambda idx: _normalize(c, x, along, eps, channel(idx))[0])
        rstd = Lazy.of(x.shape[1:2], c.dtype, lambda idx: _normalize(c, x, along, eps, channel(idx))[1])
        return out, mean, rstd
    if c.args.get("running_mean") is None or c.args.get("running_var") is None:
        raise Unsupported(f"{c.target}: evaluation mode without running statistics")
    rm, rv = float_operand(c, "running_mean"), float_operand(c, "running_var")
    return (_affine(c, x, lambda idx: (rm.at(idx[1:2]), 1 / ideal("sqrt")(rv.at(idx[1:2]) + eps)),
                    lambda idx: idx[1:2]),)


def _group_norm(c: Call) -> tuple[Lazy, Lazy, Lazy]:
    """native_group_norm: (out, mean, rstd); group g holds channels g*C/G .. (g+1)*C/G - 1, statistics over
    those channels (outer) and all spatial dims."""
    x = float_operand(c, "input")
    n, channels, groups = c.args["N"], c.args["C"], c.args["group"]
    if len(x.shape) < 2 or x.shape[:2] != (n, channels) or groups <= 0 or channels % groups:
        raise Unsupported(f"{c.target}: {groups} groups of shape {list(x.shape)}")
    per = channels // groups
    spatial = x.shape[2:]
    sizes = (per,) + spatial
    if 0 in sizes:
        raise Unsupported(f"{c.target}: statistics over an empty dimension")
    count = Fraction(math.prod(sizes))
    names = [f"{c.node}!{tag}{k}" for tag in ("m", "v") for k in range(1, len(sizes) + 1)]
    eps = c.const(c.args["eps"], c.dtype)

    def stats(b: z3.BitVecRef, g: z3.BitVecRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        def element(cs: Coords) -> z3.ExprRef:
            ch = g if per == 1 else cs[0] if groups == 1 else g * bv(per) + cs[0]
            return x.at((b, ch) + cs[1:])
        mean = _div(sum_box(sizes, names[:len(sizes)], element), count)
        var = _div(sum_box(sizes, names[len(sizes):], lambda cs: _square(element(cs) - mean)), count)
        return mean, 1 / ideal("sqrt")(var + eps)

    def group_of(ch: z3.BitVecRef) -> z3.BitVecRef:
        return bv(0) if groups == 1 else ch if per == 1 else z3.UDiv(ch, bv(per))
    out = _affine(c, x, lambda idx: stats(idx[0], group_of(idx[1])), lambda idx: idx[1:2])
    return (out, Lazy.of((n, groups), c.dtype, lambda idx: stats(idx[0], idx[1])[0]),
            Lazy.of((n, groups), c.dtype, lambda idx: stats(idx[0], idx[1])[1]))


REDUCTION_OPS: dict[str, Callable[[Call], Any]] = {
    "aten.sum.dim_IntList": _sum,
    "aten.sum.default": _sum,
    "aten.mean.dim": _mean,
    "aten.mean.default": _mean,
    "aten.amax.default": _extreme("max"),
    "aten.amin.default": _extreme("min"),
    "aten.max.default": _extreme("max"),
    "aten.min.default": _extreme("min"),
    "aten.max.dim": _extreme("max", indices=True),
    "aten.min.dim": _extreme("min", indices=True),
    **dict.fromkeys(["aten.var.correction", "aten.var.dim", "aten.var.default"], _var("var")),
    **dict.fromkeys(["aten.std.correction", "aten.std.dim", "aten.std.default"], _var("std")),
    **dict.fromkeys(["aten.var_mean.correction", "aten.var_mean.dim"], _var("var_mean")),
    **dict.fromkeys(["aten.std_mean.correction", "aten.std_mean.dim"], _var("std_mean")),
    "aten.linalg_vector_norm.default": _vector_norm,
    **dict.fromkeys(["aten.any.dim", "aten.any.dims", "aten.any.default"], _any_all("any")),
    **dict.fromkeys(["aten.all.dim", "aten.all.dims", "aten.all.default"], _any_all("all")),
    "aten.mm.default": _mm(2),
    "aten.bmm.default": _mm(3),
    "aten.addmm.default": _addmm(("mat1", "mat2"), 2),
    "aten.baddbmm.default": _addmm(("batch1", "batch2"), 3),
    "aten.mv.default": _mv,
    "aten.dot.default": _dot,
    "aten.cumsum.default": _scan(sum_over),
    "aten.cumprod.default": _scan(prod_over),
    "aten._softmax.default": _softmax(log=False),
    "aten._log_softmax.default": _softmax(log=True),
    "aten.native_layer_norm.default": _layer_norm,
    **dict.fromkeys(["aten._native_batch_norm_legit_functional.default", "aten._native_batch_norm_legit.default",
                     "aten._native_batch_norm_legit.no_stats",
                     "aten._native_batch_norm_legit_no_training.default"], _batch_norm),
    "aten.native_group_norm.default": _group_norm,
}
