"""The meaning of core ATen ops, as one table from ATen target name to a small function (DESIGN §3, §5).

`reference_outputs` turns a captured `RefGraph` into one function per model output: symbolic flat index
in, z3 term of that output element out. Inputs and parameters are uninterpreted functions of the flat
index (their values are universally quantified); floats are exact reals, transcendental functions are
the ideal functions of `semantics.axioms`. Anything not in `OPS` raises `Unsupported` naming the op,
which the verifier reports as `unknown` — never a pass.

Reductions, contractions, scans, softmax and normalizations are `semantics.torch.reductions`: their
elements are `Sum`/`Prod`/`MaxFrom`/`MinFrom` comprehensions. An op with several results gives a tuple, and a
`getitem` node picks one; picking a result that is not modelled (max.dim's indices) is unsupported.

Conventions that kernel-side matching relies on: max(a, b) = If(a >= b, a, b), min(a, b) = If(a <= b,
a, b), relu(x) = max(x, 0); constants are the exact reals of the values the op computes with (float32
for f16/bf16/f32 ops — the GPU's compute type — or float64), including ATen's internal constants (gelu's
1/sqrt(2) is float32(M_SQRT1_2) in a float32 op).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from semantics.axioms import ideal, meaning
from semantics.torch import lazy, ranges
from semantics.torch.arg_reductions import ARG_OPS
from semantics.torch.gathers import GATHER_OPS
from semantics.torch.graph import FLOAT_DTYPES, INT_WIDTHS, RefGraph, ScalarSpec, round_float
from semantics.torch.lazy import Lazy, Missing, Unsupported
from semantics.torch.reductions import REDUCTION_OPS
from semantics.torch.windows import WINDOW_OPS

__all__ = ["OPS", "RefEnv", "Unsupported", "reference_outputs"]

M_SQRT1_2 = 0.70710678118654752440   # the <cmath> constants ATen's kernels use
M_SQRT2 = 1.41421356237309504880
M_2_SQRTPI = 1.12837916709551257390


@dataclass
class RefEnv:
    """The symbols that stand for the reference's inputs. `tensors`: 'input:<i>' or 'param:<state-dict
    name>' -> a function from the flat element index (BitVec 64) to the element (Real for floats,
    BitVec of the dtype's width for integers, Bool for bool). `scalars`: user input index -> the term of
    a Python scalar input (Real for float, BitVec 64 for int, Bool for bool)."""

    tensors: dict[str, z3.FuncDeclRef]
    scalars: dict[int, z3.ExprRef]
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)   # contents name -> stated [lo, hi]


@dataclass(frozen=True)
class Call:
    """One op application: arguments by schema name (tensors as `Lazy`), result shape and dtype (of the
    first result, for an op with several), and the graph node's name (bound variables are named after
    it, so terms are the same in every run)."""

    target: str
    args: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str
    node: str = ""
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)   # the inputs' preconditions (gathers)

    def tensor(self, name: str) -> Lazy:
        value = self.args[name]
        if not isinstance(value, Lazy):
            raise Unsupported(f"{self.target}: argument {name} is not a tensor")
        return value

    def operand(self, name: str, compute: str) -> Lazy:
        """A tensor argument, or a scalar one as a 0-d tensor of the `compute` dtype."""
        value = self.args[name]
        return value if isinstance(value, Lazy) else lazy.constant(self.const(value, compute), (), compute)

    def const(self, value: Any, compute: str) -> z3.ExprRef:
        """A Python scalar as the `compute`-dtype value the op uses (an int in a float32 op is rounded)."""
        if compute in FLOAT_DTYPES:
            v = round_float(float(value), compute == "float64")
            if not math.isfinite(v):
                raise Unsupported(f"{self.target}: non-finite constant {v}")
            return z3.RealVal(Fraction(v))
        if compute in INT_WIDTHS and isinstance(value, int):
            return z3.BitVecVal(value, INT_WIDTHS[compute])
        if compute == "bool" and isinstance(value, bool):
            return z3.BoolVal(value)
        raise Unsupported(f"{self.target}: constant {value!r} in a {compute} op")

    def real(self, value: float) -> z3.ExprRef:
        """A float constant of the op itself (not an argument), in the op's precision."""
        return self.const(value, self.dtype)


Op = Callable[[Call], Lazy]   # an op with several results returns a tuple (Lazy or Missing per result)


# ---- elementwise building blocks ---------------------------------------------------------------------

def _max(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return z3.If(a >= b, a, b)


def _min(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return z3.If(a <= b, a, b)


def _sigmoid(x: z3.ExprRef) -> z3.ExprRef:
    return 1 / (1 + ideal("exp")(-x))


def _require(c: Call, kinds: frozenset[str]) -> None:
    if c.dtype not in kinds:
        raise Unsupported(f"{c.target} with result dtype {c.dtype}")


_NUMERIC = FLOAT_DTYPES | frozenset(INT_WIDTHS)
_BITS = frozenset(INT_WIDTHS) | {"bool"}


def _unary_with(make: Callable[[Call], Callable[[z3.ExprRef], z3.ExprRef]],
                kinds: frozenset[str] = FLOAT_DTYPES) -> Op:
    """x -> make(call)(x), computed in the result dtype (torch promotes an integer input of exp to
    float); `make` reads the op's constant arguments (slopes, bounds, gelu's mode)."""
    def op(c: Call) -> Lazy:
        _require(c, kinds)
        return lazy.elementwise(make(c), [c.tensor("self")], c.shape, c.dtype)
    return op


def _unary(fn: Callable[[z3.ExprRef], z3.ExprRef], kinds: frozenset[str] = FLOAT_DTYPES) -> Op:
    return _unary_with(lambda c: fn, kinds)


def _binary(fn: Callable[[z3.ExprRef, z3.ExprRef], z3.ExprRef], kinds: frozenset[str] = _NUMERIC) -> Op:
    """fn(self, other) with broadcasting; either argument may be a Python scalar."""
    def op(c: Call) -> Lazy:
        _require(c, kinds)
        return lazy.elementwise(fn, [c.operand("self", c.dtype), c.operand("other", c.dtype)], c.shape,
                                c.dtype)
    return op


def _with_alpha(fn: Callable[[z3.ExprRef, z3.ExprRef], z3.ExprRef], reverse: bool = False) -> Op:
    """add/sub: fn(self, alpha * other); rsub (reverse): fn(other, alpha * self)."""
    def op(c: Call) -> Lazy:
        _require(c, _NUMERIC)
        x, y = c.operand("self", c.dtype), c.operand("other", c.dtype)
        if reverse:
            x, y = y, x
        alpha = c.args.get("alpha", 1)
        k = c.const(alpha, c.dtype)
        return lazy.elementwise(lambda a, b: fn(a, b if alpha == 1 else k * b), [x, y], c.shape, c.dtype)
    return op


def _compare(fn: Callable[[z3.ExprRef, z3.ExprRef], z3.ExprRef]) -> Op:
    """A comparison, made in the dtype torch's type promotion picks for its operands. A float tensor
    against an infinite constant (logsumexp's `abs(max) == inf`) has a constant answer: every element is
    a (finite) real, so it compares with +inf as 0 with 1, and with -inf as 1 with 0. An integer comparison
    that the inputs' stated value ranges decide is that constant (`semantics.torch.ranges.settled`)."""
    def op(c: Call) -> Lazy:
        compute = _result_dtype([c.args["self"], c.args["other"]])
        a, b = c.args["self"], c.args["other"]
        infinite = [isinstance(v, float) and math.isinf(v) for v in (a, b)]
        if any(infinite) and compute in FLOAT_DTYPES and not all(infinite):
            inf = a if infinite[0] else b
            low, high = z3.RealVal(0), z3.RealVal(1)
            finite_rank, inf_rank = (low, high) if inf > 0 else (high, low)
            pair = (inf_rank, finite_rank) if infinite[0] else (finite_rank, inf_rank)
            return lazy.constant(z3.simplify(fn(*pair)), c.shape, "bool")
        return lazy.elementwise(lambda x, y: ranges.settled(c.ranges, fn(x, y)),
                                [c.operand("self", compute), c.operand("other", compute)], c.shape, "bool", compute)
    return op


def _logical(fn: Callable[..., z3.ExprRef], names: tuple[str, ...]) -> Op:
    def op(c: Call) -> Lazy:
        return lazy.elementwise(fn, [c.tensor(n) for n in names], c.shape, "bool", "bool")
    return op


def _category(dtype: str) -> int:
    return 2 if dtype in FLOAT_DTYPES else 1 if dtype in INT_WIDTHS else 0


def _result_dtype(values: list[Any]) -> str:
    """torch.result_type for our dtypes: tensors with dims decide, then 0-d tensors, then Python scalars,
    and a later tier only wins by a higher category (bool < integer < float)."""
    tiers = [
        [v.dtype for v in values if isinstance(v, Lazy) and v.shape],
        [v.dtype for v in values if isinstance(v, Lazy) and not v.shape],
        [{bool: "bool", int: "int64", float: "float32"}[type(v)] for v in values if not isinstance(v, Lazy)],
    ]
    best: str | None = None
    for tier in filter(None, tiers):
        top = max(tier, key=lambda d: (_category(d), INT_WIDTHS.get(d, 0), d == "float64"))
        if best is None or _category(top) > _category(best):
            best = top
    return best or "float32"


# ---- ops with constant arguments ---------------------------------------------------------------------

def _leaky_relu(c: Call) -> Callable[[z3.ExprRef], z3.ExprRef]:
    slope = c.const(c.args["negative_slope"], c.dtype)
    return lambda x: z3.If(x > 0, x, x * slope)


def _clamp_fn(c: Call, lo_name: str, hi_name: str) -> Callable[[z3.ExprRef], z3.ExprRef]:
    lo, hi = c.args.get(lo_name), c.args.get(hi_name)
    lo_t = None if lo is None else c.const(lo, c.dtype)
    hi_t = None if hi is None else c.const(hi, c.dtype)

    def fn(x: z3.ExprRef) -> z3.ExprRef:
        y = x if lo_t is None else _max(x, lo_t)
        return y if hi_t is None else _min(y, hi_t)
    return fn


def _clamp_tensor(c: Call) -> Lazy:
    """clamp with tensor bounds: min(max(x, lo), hi), bounds broadcast like operands."""
    _require(c, _NUMERIC)
    bounds = [(name, f) for name, f in (("min", _max), ("max", _min)) if c.args.get(name) is not None]

    def fn(x: z3.ExprRef, *values: z3.ExprRef) -> z3.ExprRef:
        for (_, f), v in zip(bounds, values, strict=True):
            x = f(x, v)
        return x
    operands = [c.tensor("self")] + [c.operand(name, c.dtype) for name, _ in bounds]
    return lazy.elementwise(fn, operands, c.shape, c.dtype)


def _gelu(c: Call) -> Callable[[z3.ExprRef], z3.ExprRef]:
    half, one = c.real(0.5), z3.RealVal(1)
    mode = c.args.get("approximate", "none")
    if mode == "none":
        k = c.real(M_SQRT1_2)
        return lambda x: half * x * (one + ideal("erf")(x * k))
    if mode == "tanh":
        beta, kappa = c.real(M_SQRT2 * M_2_SQRTPI * 0.5), c.real(0.044715)
        return lambda x: half * x * (one + ideal("tanh")(beta * (x + kappa * (x * x * x))))
    raise Unsupported(f"aten.gelu with approximate={mode!r}")


def _elu(c: Call) -> Callable[[z3.ExprRef], z3.ExprRef]:
    """ATen: x > 0 ? x * scale : (exp(x * input_scale) - 1) * (alpha * scale), the product in the op's
    precision."""
    alpha, scale, in_scale = (c.args[n] for n in ("alpha", "scale", "input_scale"))
    double = c.dtype == "float64"
    neg = c.real(round_float(float(alpha) * float(scale), double))
    pos, inner = c.real(scale), c.real(in_scale)
    return lambda x: z3.If(x > 0, x if scale == 1 else x * pos,
                           (ideal("exp")(x if in_scale == 1 else x * inner) - 1) * neg)


_MAX_POW = 64


def _pow(c: Call) -> Callable[[z3.ExprRef], z3.ExprRef]:
    """x ** n for a constant n: integers as products (n = 0 gives 1, as in torch), +-0.5 as square roots."""
    n = c.args["exponent"]
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if n in (0.5, -0.5) and c.dtype in FLOAT_DTYPES:
        return (lambda x: ideal("sqrt")(x)) if n > 0 else (lambda x: 1 / ideal("sqrt")(x))
    if not isinstance(n, int) or isinstance(n, bool) or abs(n) > _MAX_POW:
        raise Unsupported(f"aten.pow.Tensor_Scalar with exponent {n!r}")
    if n < 0:
        _require(c, FLOAT_DTYPES)
    one = c.const(1, c.dtype)

    def power(x: z3.ExprRef) -> z3.ExprRef:
        term = one
        for k in range(abs(n)):
            term = x if k == 0 else term * x
        return term if n >= 0 else one / term
    return power


def _div_mode(c: Call) -> Lazy:
    mode = c.args.get("rounding_mode")
    if mode is not None:
        raise Unsupported(f"aten.div.Tensor_mode with rounding_mode={mode!r}")
    return _binary(lambda a, b: a / b, FLOAT_DTYPES)(c)


def _where(c: Call) -> Lazy:
    cond = lazy.elementwise(lambda b: b, [c.tensor("condition")], c.shape, "bool")
    a, b = (lazy.elementwise(lambda v: v, [c.operand(n, c.dtype)], c.shape, c.dtype) for n in ("self", "other"))

    def at(idx: lazy.Index) -> z3.ExprRef:
        test = cond.at(idx)
        if z3.is_true(test) or z3.is_false(test):   # a constant condition (a comparison with inf) picks
            return a.at(idx) if z3.is_true(test) else b.at(idx)
        return z3.If(test, a.at(idx), b.at(idx))
    return Lazy.of(c.shape, c.dtype, at)


def _fill(name: str) -> Op:
    """full / scalar_tensor: every element is the constant, in the result dtype. A non-finite constant
    has no real value: it is unsupported where an element is read, not where it is built (kl_div's
    `where(isnan(t), nan, ...)` never reads it, isnan being false)."""
    def op(c: Call) -> Lazy:
        value = c.args[name]
        if c.dtype in FLOAT_DTYPES and not math.isfinite(float(value)):
            def read(idx: lazy.Index) -> z3.ExprRef:
                raise Unsupported(f"{c.target}: non-finite constant {value}")
            return Lazy.of(c.shape, c.dtype, read)
        return lazy.constant(c.const(value, c.dtype), c.shape, c.dtype)
    return op


def _isnan(c: Call) -> Lazy:
    """isnan: false for every element. Floats are exact reals (the `float.reals` axiom every float task
    lists), and a real is never NaN; integers never are."""
    if c.tensor("self").dtype not in _NUMERIC:
        raise Unsupported(f"{c.target} of a {c.tensor('self').dtype} tensor")
    return lazy.constant(z3.BoolVal(False), c.shape, "bool")


# ---- layout ------------------------------------------------------------------------------------------

def _arange(c: Call) -> Lazy:
    """arange(start, end, step) of an integer dtype: element i is start + i * step (the shape, from the
    capture, is ceil((end - start) / step)). The index masks of triu / tril are built from two of them."""
    if c.dtype not in INT_WIDTHS:
        raise Unsupported(f"{c.target} of dtype {c.dtype}")
    start, step = (c.args.get(name, default) for name, default in (("start", 0), ("step", 1)))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, step)):
        raise Unsupported(f"{c.target} with non-integer start or step")
    width = INT_WIDTHS[c.dtype]
    first, stride = z3.BitVecVal(start, width), z3.BitVecVal(step, width)

    def at(idx: lazy.Index) -> z3.ExprRef:
        i = idx[0] if width == 64 else z3.Extract(width - 1, 0, idx[0])
        return first + i * stride
    return Lazy.of(c.shape, c.dtype, at)


def _same(c: Call) -> Lazy:
    """clone, alias, _to_copy, copy: the values, converted to the result dtype (float casts are the
    identity on reals)."""
    src = c.tensor("src" if "src" in c.args else "self")
    return lazy.elementwise(lambda x: x, [src], c.shape, c.dtype)


def _view(c: Call) -> Lazy:
    """view, reshape, flatten, squeeze, unsqueeze: same elements in row-major order, new shape."""
    return lazy.reshape(c.tensor("self"), c.shape)


def _transpose(c: Call) -> Lazy:
    x = c.tensor("self")
    dims = list(range(len(x.shape)))
    a, b = c.args["dim0"] % len(dims), c.args["dim1"] % len(dims)
    dims[a], dims[b] = dims[b], dims[a]
    return lazy.permute(x, dims)


def _t(c: Call) -> Lazy:
    x = c.tensor("self")
    return lazy.permute(x, list(reversed(range(len(x.shape)))))


OPS: dict[str, Op] = {
    # layout: only indices change
    "aten.permute.default": lambda c: lazy.permute(c.tensor("self"), c.args["dims"]),
    "aten.t.default": _t,
    "aten.transpose.int": _transpose,
    **dict.fromkeys(["aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
                     "aten.flatten.using_ints", "aten.unsqueeze.default", "aten.squeeze.default",
                     "aten.squeeze.dim", "aten.squeeze.dims"], _view),
    "aten.expand.default": lambda c: lazy.expand(c.tensor("self"), c.shape),
    **dict.fromkeys(["aten.clone.default", "aten.alias.default", "aten._to_copy.default",
                     "aten.copy.default"], _same),
    "aten.slice.Tensor": lambda c: lazy.slice_dim(c.tensor("self"), c.args["dim"], c.args["start"],
                                                  c.args["end"], c.args["step"]),
    "aten.constant_pad_nd.default": lambda c: lazy.pad(c.tensor("self"), c.args["pad"],
                                                       c.const(c.args.get("value", 0), c.dtype)),
    "aten.select.int": lambda c: lazy.select(c.tensor("self"), c.args["dim"], c.args["index"]),
    "aten.cat.default": lambda c: lazy.cat(c.args["tensors"], c.args["dim"]),
    "aten.full.default": _fill("fill_value"),
    "aten.full_like.default": _fill("fill_value"),
    "aten.flip.default": lambda c: lazy.flip(c.tensor("self"), c.args["dims"]),
    "aten.scalar_tensor.default": _fill("s"),
    **dict.fromkeys(["aten.arange.default", "aten.arange.start", "aten.arange.start_step"], _arange),
    # activations and unary functions
    "aten.relu.default": _unary(lambda x: _max(x, 0), _NUMERIC),
    "aten.leaky_relu.default": _unary_with(_leaky_relu),
    "aten.hardtanh.default": _unary_with(lambda c: _clamp_fn(c, "min_val", "max_val"), _NUMERIC),
    "aten.clamp.default": _unary_with(lambda c: _clamp_fn(c, "min", "max"), _NUMERIC),
    "aten.clamp_min.default": _unary_with(lambda c: _clamp_fn(c, "min", "max"), _NUMERIC),
    "aten.clamp_max.default": _unary_with(lambda c: _clamp_fn(c, "min", "max"), _NUMERIC),
    "aten.clamp.Tensor": _clamp_tensor,
    "aten.sigmoid.default": _unary(_sigmoid),
    "aten.silu.default": _unary(lambda x: x * _sigmoid(x)),
    "aten.gelu.default": _unary_with(_gelu),
    "aten.elu.default": _unary_with(_elu),
    "aten.tanh.default": _unary(lambda x: ideal("tanh")(x)),
    "aten.exp.default": _unary(lambda x: ideal("exp")(x)),
    "aten.expm1.default": _unary(meaning("expm1")),
    "aten.log.default": _unary(lambda x: ideal("log")(x)),
    "aten.log1p.default": _unary(meaning("log1p")),
    "aten.cosh.default": _unary(meaning("cosh")),
    "aten.sinh.default": _unary(meaning("sinh")),
    "aten.erf.default": _unary(lambda x: ideal("erf")(x)),
    "aten.sqrt.default": _unary(lambda x: ideal("sqrt")(x)),
    "aten.rsqrt.default": _unary(lambda x: 1 / ideal("sqrt")(x)),
    "aten.reciprocal.default": _unary(lambda x: 1 / x),
    "aten.isnan.default": _isnan,
    "aten.abs.default": _unary(lambda x: z3.If(x >= 0, x, -x), _NUMERIC),
    "aten.neg.default": _unary(lambda x: -x, _NUMERIC),
    "aten.square.default": _unary(lambda x: x * x, _NUMERIC),
    "aten.pow.Tensor_Scalar": _unary_with(_pow, _NUMERIC),
    # arithmetic
    "aten.add.Tensor": _with_alpha(lambda a, b: a + b),
    "aten.add.Scalar": _with_alpha(lambda a, b: a + b),
    "aten.sub.Tensor": _with_alpha(lambda a, b: a - b),
    "aten.sub.Scalar": _with_alpha(lambda a, b: a - b),
    "aten.rsub.Tensor": _with_alpha(lambda a, b: a - b, reverse=True),
    "aten.rsub.Scalar": _with_alpha(lambda a, b: a - b, reverse=True),
    "aten.mul.Tensor": _binary(lambda a, b: a * b),
    "aten.mul.Scalar": _binary(lambda a, b: a * b),
    "aten.div.Tensor": _binary(lambda a, b: a / b, FLOAT_DTYPES),
    "aten.div.Scalar": _binary(lambda a, b: a / b, FLOAT_DTYPES),
    "aten.div.Tensor_mode": _div_mode,
    "aten.maximum.default": _binary(_max),
    "aten.minimum.default": _binary(_min),
    "aten.where.self": _where,
    # comparisons and logic
    **{f"aten.{name}.{kind}": _compare(fn) for name, fn in (
        ("gt", lambda a, b: a > b), ("lt", lambda a, b: a < b), ("ge", lambda a, b: a >= b),
        ("le", lambda a, b: a <= b), ("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b),
    ) for kind in ("Tensor", "Scalar")},
    "aten.logical_not.default": _logical(z3.Not, ("self",)),
    "aten.logical_and.default": _logical(z3.And, ("self", "other")),
    "aten.logical_or.default": _logical(z3.Or, ("self", "other")),
    "aten.bitwise_not.default": _unary(lambda x: z3.Not(x) if z3.is_bool(x) else ~x, _BITS),
    "aten.bitwise_and.Tensor": _binary(lambda a, b: z3.And(a, b) if z3.is_bool(a) else a & b, _BITS),
    "aten.bitwise_or.Tensor": _binary(lambda a, b: z3.Or(a, b) if z3.is_bool(a) else a | b, _BITS),
    "aten.bitwise_xor.Tensor": _binary(lambda a, b: z3.Xor(a, b) if z3.is_bool(a) else a ^ b, _BITS),
    # reductions, contractions, scans, softmax and normalizations (semantics/torch/reductions.py)
    **REDUCTION_OPS,
    # argmax / argmin (semantics/torch/arg_reductions.py)
    **ARG_OPS,
    # elements picked by indices read from a tensor (semantics/torch/gathers.py)
    **GATHER_OPS,
    # convolution and pooling (semantics/torch/windows.py)
    **WINDOW_OPS,
}


# ---- from graph to output terms ----------------------------------------------------------------------

def reference_outputs(graph: RefGraph, env: RefEnv) -> list[Callable[[z3.BitVecRef], z3.ExprRef]]:
    """Per model output, the function from a symbolic flat index e (BitVec 64, 0 <= e < numel) to the
    z3 term of that output element. Only nodes the outputs depend on are interpreted, so dead nodes
    (export's metadata assertions, unused results) do not make a reference unsupported; every node that is
    interpreted is checked here, so an unmodelled op raises `Unsupported` now, not when a term is built."""
    return [value.flat for value in _Interpreter(graph, env).outputs()]


class _Interpreter:
    def __init__(self, graph: RefGraph, env: RefEnv):
        self.graph = graph
        self.env = env
        self.nodes = {n["name"]: n for n in graph.nodes}
        self.values: dict[str, Lazy | tuple[Lazy | Missing, ...]] = {}

    def outputs(self) -> list[Lazy]:
        out = next(n for n in self.graph.nodes if n["op"] == "output")
        needed = self._needed(out["args"])
        for node in self.graph.nodes:          # graph order is topological
            if node["name"] in needed:
                self.values[node["name"]] = self._node(node)
        return [self._value(a) for a in out["args"]]

    def _needed(self, roots: list[Any]) -> set[str]:
        seen: set[str] = set()
        stack = _refs(roots)
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(_refs(list(self.nodes[name].get("args", {}).values())))
        return seen

    def _node(self, node: dict[str, Any]) -> Lazy | tuple[Lazy | Missing, ...]:
        out = node["out"]
        if node["op"] == "placeholder":
            return self._placeholder(node, out)
        target = node["target"]
        if target == "getitem":
            return self._getitem(node)
        if target not in OPS:
            raise Unsupported(f"ATen op {target} is not modelled")
        several = isinstance(out, list)
        first = out[0] if several and out else out
        if not isinstance(first, dict):
            raise Unsupported(f"{target} with no tensor result")
        call = Call(target, {k: self._value(v) for k, v in node["args"].items()}, tuple(first["shape"]),
                    first["dtype"], node["name"], self.env.ranges)
        result = OPS[target](call)
        if not several:
            if not isinstance(result, Lazy):
                raise Unsupported(f"{target}: modelled with several results, torch gives one")
            _check_result(target, result, out)
            return result
        results = result if isinstance(result, tuple) else (result,)
        if len(results) > len(out):
            raise Unsupported(f"{target}: modelled with {len(results)} results, torch gives {len(out)}")
        results += tuple(Missing(f"{target}: result {i} is not modelled") for i in range(len(results), len(out)))
        for value, spec in zip(results, out, strict=True):
            if isinstance(value, Lazy):
                _check_result(target, value, spec)
        return results

    def _getitem(self, node: dict[str, Any]) -> Lazy:
        """One result of an op with several (getitem(node, i)); picking an unmodelled one is unsupported."""
        source, i = self._value(node["args"]["arg0"]), node["args"]["arg1"]
        if not isinstance(source, tuple) or not isinstance(i, int) or not -len(source) <= i < len(source):
            raise Unsupported(f"getitem {i!r} of {node['args']['arg0']}")
        value = source[i]
        if isinstance(value, Missing):
            raise Unsupported(value.why)
        return value

    def _placeholder(self, node: dict[str, Any], out: dict[str, Any]) -> Lazy:
        shape, dtype = tuple(out["shape"]), out["dtype"]
        if "constant" in node:
            raise Unsupported(f"tensor constant {node['constant']} created in forward (values not captured)")
        if "input" in node and isinstance(self.graph.user_inputs[node["input"]], ScalarSpec):
            term = self.env.scalars.get(node["input"])
            if term is None:
                raise KeyError(f"RefEnv.scalars has no term for user input {node['input']}")
            _check_sort(term.sort(), dtype, f"scalar input {node['input']}")
            return lazy.constant(term, shape, dtype)
        key = f"input:{node['input']}" if "input" in node else f"param:{node['param']}"
        decl = self.env.tensors.get(key)
        if decl is None and "param" in node:   # a parameter or buffer the task does not bind: fine until read
            return Lazy.of(shape, dtype, lambda idx: _unbound(node["param"]))
        if decl is None:
            raise KeyError(f"RefEnv.tensors has no function for {key}")
        if decl.arity() != 1 or decl.domain(0) != z3.BitVecSort(64):
            raise TypeError(f"{key}: expected a function of one BitVec(64) index")
        if dtype == "bool" and decl.range() == z3.BitVecSort(8):   # a bool tensor's storage: one byte each
            return lazy.from_storage(lambda f: decl(f) != 0, shape, dtype)
        _check_sort(decl.range(), dtype, key)
        return lazy.from_storage(decl, shape, dtype)

    def _value(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self._value(x) for x in v]
        if isinstance(v, dict):
            if "node" in v:
                return self.values[v["node"]]
            if "float" in v:
                return float.fromhex(v["float"])
            (kind, name), = v.items()
            if kind not in ("dtype", "layout", "memory_format"):
                raise ValueError(f"unknown value {v} in reference graph")
            return name
        return v


def _unbound(param: str) -> z3.ExprRef:
    """A read of a parameter or buffer no kernel buffer is bound to (batch norm's running statistics are
    inputs of the op even in training mode, where only their update, not an output, reads them)."""
    raise Unsupported(f"the reference reads {param}, which no kernel buffer is bound to "
                      "(name it in [reference] parameters)")


def _refs(value: Any) -> list[str]:
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    if isinstance(value, dict):
        return [value["node"]] if "node" in value else [r for v in value.values() for r in _refs(v)]
    return []


def _check_result(target: str, result: Lazy, spec: dict[str, Any] | None) -> None:
    if spec is None or (result.shape, result.dtype) != (tuple(spec["shape"]), spec["dtype"]):
        got = "nothing" if spec is None else f"{spec['dtype']}{list(spec['shape'])}"
        raise Unsupported(f"{target}: modelled as {result.dtype}{list(result.shape)} but torch gives {got}")


def _check_sort(sort: z3.SortRef, dtype: str, what: str) -> None:
    if sort != lazy.element_sort(dtype):
        raise TypeError(f"{what}: a {dtype} element must be {lazy.element_sort(dtype)}, not {sort}")
