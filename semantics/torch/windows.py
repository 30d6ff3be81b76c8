"""Convolution and pooling: ATen ops whose elements are comprehensions over a sliding window.

Along each spatial dim a window has a kernel size K, stride s, padding p and dilation d; output position o
reads input position o*s - p + k*d for k < K (a transposed convolution: the input position i with
i*s - p + k*d = o). Conventions the kernel side relies on:

* One comprehension per element, over the flattened box of reduced coordinates, the first one outermost
  (row-major, size-1 coordinates left out, as `lazy.unflatten` does): a convolution sums over
  (input channel of the group, k_1, .., k_n), a pooling over (k_1, .., k_n). A box of fewer than
  SMALL_WINDOW (8) elements is no comprehension but its terms written out in that order (a sum, or a
  max tree folded from the first), with constant coordinates: kernels unroll such windows.
* Convolution (zero padding): Σ_m x[b, g*ICG + icg, pos] * w[oc, icg, k] (+ bias[oc]), g = oc / OCG the
  group of the output channel, the weight read at its flat index oc*|box| + m (affine in m, which is
  how a reindexing is found); a transposed one reads w[g*ICG + icg, oc % OCG, k]. A term whose input
  position lies in the padding is If(inside, x * w, 0); a dim whose every position is inside (no padding,
  no overhang) has no test. A position is a 64-bit vector o*s + k*d - p: below 0 it wraps, so one
  unsigned `pos < I` tests both ends.
* max pooling ignores positions outside the input: MaxFrom(e(0), 1, K, λm. e(m)), where e reads each
  coordinate outside the input at the window's first position inside it instead (a value of the window:
  max is idempotent, so the maximum is unchanged); a window with no position inside is unsupported.
* avg pooling: Σ_m If(inside, x, 0) / divisor, the divisor `divisor_override`, or the number of window
  positions inside [-p, I + p) (count_include_pad) or inside the input, a constant where it is one for
  every window (then as mean's: the sum times 1/n), else the exact real of a 64-bit count.
* The parameters are checked against the result shape torch computed (a mismatch is unsupported, never
  a guess); a padding mode other than zeros is not this op (reflect and circular arrive as index ops).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import z3

from semantics.comprehension import max_over, sum_over
from semantics.torch.lazy import Index, Lazy, Missing, Unsupported, bv, unflatten
from semantics.torch.reductions import float_operand

if TYPE_CHECKING:
    from semantics.torch.ops import Call

__all__ = ["WINDOW_OPS"]

Coords = tuple[z3.BitVecRef, ...]


@dataclass(frozen=True)
class Axis:
    """One spatial dim of a window: input size, kernel size, stride, padding, dilation, output size."""

    size: int
    kernel: int
    stride: int
    padding: int
    dilation: int
    out: int

    def position(self, o: z3.BitVecRef, k: z3.BitVecRef) -> z3.BitVecRef:
        """o*s + k*d - p: the input position output o reads at tap k (wrapped below 0)."""
        pos = _scaled(o, self.stride)
        if self.kernel > 1:
            pos = pos + _scaled(k, self.dilation)
        return pos - bv(self.padding) if self.padding else pos

    def always_inside(self) -> bool:
        return self.padding == 0 and (self.out - 1) * self.stride + (self.kernel - 1) * self.dilation < self.size

    def inside(self, pos: z3.BitVecRef) -> z3.BoolRef:
        return z3.ULT(pos, bv(self.size))

    def first_inside(self, o: z3.BitVecRef) -> z3.BitVecRef:
        """The window's first position inside the input: its start, or past the left padding the first tap
        at or after 0 (the window at o has one, `check_every_window_reads`)."""
        start = _scaled(o, self.stride)
        if self.padding == 0:
            return start
        low = bv(self.padding) - start
        skip = low if self.dilation == 1 else _scaled(z3.UDiv(low + bv(self.dilation - 1), bv(self.dilation)),
                                                      self.dilation)
        return z3.If(z3.ULE(bv(self.padding), start), start - bv(self.padding), start + skip - bv(self.padding))

    def check_every_window_reads(self, what: str) -> None:
        """Every window has a position inside the input and `first_inside` names it. Only the windows that
        start in the left padding or reach past the end are examined (at most about (p + K*d) / s)."""
        for o in self._edge_windows():
            start = o * self.stride - self.padding
            taps = [start + k * self.dilation for k in range(self.kernel)]
            inside = [t for t in taps if 0 <= t < self.size]
            if not inside:
                raise Unsupported(f"{what}: output position {o} has a window with no input position")

    def _edge_windows(self) -> list[int]:
        low = range(min(self.out, -(-self.padding // self.stride)))
        reach = (self.kernel - 1) * self.dilation - self.padding      # window end - o*s
        first_high = max(0, -(-(self.size - reach) // self.stride))
        return sorted(set(low) | set(range(min(first_high, self.out), self.out)))


def _scaled(i: z3.BitVecRef, n: int) -> z3.BitVecRef:
    return i if n == 1 else i * bv(n)


def _spatial(c: Call, name: str, n: int, default: Sequence[int] | None = None) -> tuple[int, ...]:
    """A per-dim parameter as ATen gives it: n values, one for every dim, or [] for the default."""
    value = c.args.get(name)
    if value is None or value == []:
        if default is None:
            raise Unsupported(f"{c.target}: no {name}")
        return tuple(default)
    values = [value] if isinstance(value, int) else list(value)
    if len(values) == 1:
        values *= n
    if len(values) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise Unsupported(f"{c.target}: {name}={value!r} for {n} spatial dims")
    return tuple(values)


SMALL_WINDOW = 8   # a box of fewer elements is written out: a kernel unrolls such a window (nvcc does for a
                   # constant trip count), and its sum of a few terms is then compared term by term


def _corners(sizes: Sequence[int]) -> list[tuple[int, Coords]]:
    """(m, coordinates of m) for every m of a small box, the coordinates as constants."""
    out = []
    for m in range(math.prod(sizes)):
        coords, rest = [], m
        for n in reversed(sizes):
            coords.append(rest % n)
            rest //= n
        out.append((m, tuple(bv(c) for c in reversed(coords))))
    return out


def _box_sum(node: str, sizes: Sequence[int], body: Callable[[z3.BitVecRef, Coords], z3.ExprRef]) -> z3.ExprRef:
    """Σ_m over the flattened box `sizes` (first coordinate outermost) of body(m, coordinates of m); a box of
    fewer than SMALL_WINDOW elements as the sum of its terms in that order."""
    total = math.prod(sizes)
    if total < SMALL_WINDOW:
        terms = [body(bv(m), coords) for m, coords in _corners(sizes)]
        return terms[0] if total == 1 else z3.Sum(terms)
    m = z3.BitVec(f"{node}!w", 64)
    return sum_over(0, total, m, body(m, tuple(unflatten(m, sizes))))


def _box_max(node: str, sizes: Sequence[int], body: Callable[[Coords], z3.ExprRef]) -> z3.ExprRef:
    """max over the flattened box: MaxFrom(body at 0, 1, n, λm. body at m); a box of fewer than
    SMALL_WINDOW elements as the tree If(a >= b, a, b) folded from the first element."""
    total = math.prod(sizes)
    if total < SMALL_WINDOW:
        terms = [body(coords) for _, coords in _corners(sizes)]
        best = terms[0]
        for t in terms[1:]:
            best = z3.If(best >= t, best, t)
        return best
    m = z3.BitVec(f"{node}!w", 64)
    return max_over(body(tuple(bv(0) for _ in sizes)), 1, total, m, body(tuple(unflatten(m, sizes))))


def _guarded(tests: list[z3.BoolRef], term: z3.ExprRef) -> z3.ExprRef:
    return z3.If(z3.And(tests) if len(tests) > 1 else tests[0], term, z3.RealVal(0)) if tests else term


def _check_shape(c: Call, expected: Sequence[int]) -> None:
    if tuple(expected) != c.shape:
        raise Unsupported(f"{c.target}: the parameters give shape {list(expected)}, torch gives {list(c.shape)}")


# ---- convolution -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Conv:
    """A convolution's shapes: groups, channels per group on each side, and the spatial axes."""

    groups: int
    in_per_group: int
    out_per_group: int
    axes: tuple[Axis, ...]
    transposed: bool

    def group(self, oc: z3.BitVecRef) -> z3.BitVecRef:
        return bv(0) if self.groups == 1 else oc if self.out_per_group == 1 else z3.UDiv(oc, bv(self.out_per_group))

    def channel(self, g: z3.BitVecRef, icg: z3.BitVecRef) -> z3.BitVecRef:
        """Input channel icg of group g."""
        if self.groups == 1:
            return icg
        return g if self.in_per_group == 1 else _scaled(g, self.in_per_group) + icg

    def taps(self, out: Coords, ks: Coords) -> tuple[Coords, list[z3.BoolRef]]:
        """The input positions output `out` reads at taps `ks`, and the tests that they are inside."""
        positions, tests = [], []
        for axis, o, k in zip(self.axes, out, ks, strict=True):
            if not self.transposed:
                pos = axis.position(o, k)
                positions.append(pos)
                if not axis.always_inside():
                    tests.append(axis.inside(pos))
                continue
            z = o + bv(axis.padding) - _scaled(k, axis.dilation) if axis.kernel > 1 else o + bv(axis.padding)
            positions.append(z if axis.stride == 1 else z3.UDiv(z, bv(axis.stride)))
            tests.append(z3.ULT(z, bv(axis.size * axis.stride)))
            if axis.stride > 1:
                tests.append(z3.URem(z, bv(axis.stride)) == bv(0))
        return tuple(positions), tests


def _conv_axes(c: Call, x: Lazy, w: Lazy, transposed: bool) -> tuple[Axis, ...]:
    n = len(w.shape) - 2
    stride, padding, dilation = (_spatial(c, name, n) for name in ("stride", "padding", "dilation"))
    out_padding = _spatial(c, "output_padding", n, [0] * n)
    if not transposed and any(out_padding):
        raise Unsupported(f"{c.target}: output_padding {list(out_padding)} without transposed")
    if min(stride + dilation) < 1 or min(padding + out_padding) < 0:
        raise Unsupported(f"{c.target}: stride {list(stride)}, padding {list(padding)}, dilation {list(dilation)}")
    sizes, kernels = x.shape[2:], w.shape[2:]
    if transposed:
        outs = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
                for i, k, s, p, d, op in zip(sizes, kernels, stride, padding, dilation, out_padding, strict=True)]
    else:
        outs = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                for i, k, s, p, d in zip(sizes, kernels, stride, padding, dilation, strict=True)]
    out_channels = w.shape[1] * c.args["groups"] if transposed else w.shape[0]
    _check_shape(c, (x.shape[0], out_channels) + tuple(outs))
    return tuple(Axis(*v) for v in zip(sizes, kernels, stride, padding, dilation, outs, strict=True))


def _convolution(c: Call) -> Lazy:
    """aten.convolution: 1-, 2- or 3-d, transposed or not, any stride, padding, dilation and groups."""
    x, w = float_operand(c, "input"), float_operand(c, "weight")
    transposed, groups = bool(c.args["transposed"]), c.args["groups"]
    if len(w.shape) not in (3, 4, 5) or len(x.shape) != len(w.shape) or groups < 1:
        raise Unsupported(f"{c.target} of input {list(x.shape)}, weight {list(w.shape)}, {groups} groups")
    channels = x.shape[1]
    if channels % groups or (not transposed and w.shape[0] % groups) or 0 in w.shape or 0 in x.shape:
        raise Unsupported(f"{c.target}: {channels} channels, weight {list(w.shape)}, {groups} groups")
    out_per_group = w.shape[1] if transposed else w.shape[0] // groups
    in_per_group = channels // groups
    if (w.shape[0] if transposed else w.shape[1]) != (channels if transposed else in_per_group):
        raise Unsupported(f"{c.target}: weight {list(w.shape)} for {channels} channels in {groups} groups")
    conv = _Conv(groups, in_per_group, out_per_group, _conv_axes(c, x, w, transposed), transposed)
    bias = None if c.args.get("bias") is None else float_operand(c, "bias")
    box = (in_per_group,) + w.shape[2:]
    oc_varies = w.shape[0] > 1

    def at(idx: Index) -> z3.ExprRef:
        b, oc, out = idx[0], idx[1], tuple(idx[2:])
        g = conv.group(oc)

        def term(m: z3.BitVecRef, cs: Coords) -> z3.ExprRef:
            icg, ks = cs[0], cs[1:]
            positions, tests = conv.taps(out, ks)
            ic = conv.channel(g, icg)
            if transposed:
                ocg = oc if groups == 1 else bv(0) if out_per_group == 1 else z3.URem(oc, bv(out_per_group))
                weight = w.at((ic, ocg) + ks)
            else:   # (icg, k..) is the weight's row-major tail: its flat index is oc * |box| + m
                weight = w.flat(_scaled(oc, math.prod(box)) + m if oc_varies else m)
            return _guarded(tests, x.at((b, ic) + positions) * weight)
        total = _box_sum(c.node, box, term)
        return total if bias is None else total + bias.at((oc,))
    return Lazy.of(c.shape, c.dtype, at)


# ---- pooling -----------------------------------------------------------------------------------------

def _pool_axes(c: Call, x: Lazy, n: int, dilated: bool) -> tuple[Axis, ...]:
    """The axes of a pooling over the last n dims; the output size as torch's pooling_output_shape."""
    if len(x.shape) not in (n + 1, n + 2) or 0 in x.shape:
        raise Unsupported(f"{c.target} of shape {list(x.shape)}")
    kernel = _spatial(c, "kernel_size", n)
    stride = _spatial(c, "stride", n, kernel)
    padding = _spatial(c, "padding", n, [0] * n)
    dilation = _spatial(c, "dilation", n, [1] * n) if dilated else (1,) * n
    ceil = bool(c.args.get("ceil_mode", False))
    if min(kernel + stride + dilation) < 1 or any(p < 0 or 2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise Unsupported(f"{c.target}: kernel {list(kernel)}, stride {list(stride)}, padding {list(padding)}")
    outs = []
    for i, k, s, p, d in zip(x.shape[-n:], kernel, stride, padding, dilation, strict=True):
        span = i + 2 * p - d * (k - 1) - 1
        o = (span + (s - 1 if ceil else 0)) // s + 1
        if ceil and (o - 1) * s >= i + p:
            o -= 1
        outs.append(o)
    _check_shape(c, x.shape[:-n] + tuple(outs))
    return tuple(Axis(*v) for v in zip(x.shape[-n:], kernel, stride, padding, dilation, outs, strict=True))


def _max_pool(n: int) -> Callable[[Call], tuple[Lazy, Missing]]:
    """max_pool{n}d_with_indices: (values, indices); the indices are not modelled."""
    def op(c: Call) -> tuple[Lazy, Missing]:
        x = float_operand(c)
        axes = _pool_axes(c, x, n, dilated=True)
        for axis in axes:
            if not axis.always_inside():
                axis.check_every_window_reads(c.target)

        def at(idx: Index) -> z3.ExprRef:
            lead, out = tuple(idx[:-n]), tuple(idx[-n:])

            def element(ks: Coords) -> z3.ExprRef:
                positions = []
                for axis, o, k in zip(axes, out, ks, strict=True):
                    pos = axis.position(o, k)
                    positions.append(pos if axis.always_inside() else
                                     z3.If(axis.inside(pos), pos, axis.first_inside(o)))
                return x.at(lead + tuple(positions))
            return _box_max(c.node, [a.kernel for a in axes], element)
        return Lazy.of(c.shape, c.dtype, at), Missing(f"{c.target}: the indices result is not modelled")
    return op


def _count(axis: Axis, o: z3.BitVecRef, include_pad: bool) -> z3.BitVecRef:
    """How many window positions of output o the divisor counts (torch's avg_pool: the window clipped to
    [-p, I + p), and with count_include_pad false to [0, I)): positive, so its unsigned value is the count."""
    start = _scaled(o, axis.stride) - bv(axis.padding)
    end = start + bv(axis.kernel)
    end = z3.If(end < bv(axis.size + axis.padding), end, bv(axis.size + axis.padding))
    if include_pad:
        return end - start
    lo = z3.If(start > bv(0), start, bv(0))
    hi = z3.If(end < bv(axis.size), end, bv(axis.size))
    return hi - lo


def _count_is_constant(axis: Axis, include_pad: bool) -> bool:
    """Every window of the axis counts K positions: none reaches past [-p, I + p) (or, without the padding
    counted, none reaches outside the input)."""
    last_end = (axis.out - 1) * axis.stride - axis.padding + axis.kernel
    return last_end <= axis.size + axis.padding if include_pad else axis.always_inside()


def _avg_pool(n: int) -> Callable[[Call], Lazy]:
    def op(c: Call) -> Lazy:
        x = float_operand(c)
        axes = _pool_axes(c, x, n, dilated=False)
        include_pad, override = bool(c.args.get("count_include_pad", True)), c.args.get("divisor_override")
        if override is not None and (not isinstance(override, int) or override <= 0):
            raise Unsupported(f"{c.target}: divisor_override={override!r}")
        for axis in axes:
            if not (include_pad or axis.always_inside()):
                axis.check_every_window_reads(c.target)     # no window divides by a count of 0
        constant = override is not None or all(_count_is_constant(a, include_pad) for a in axes)
        fixed = Fraction(override if override is not None else math.prod(a.kernel for a in axes))

        def at(idx: Index) -> z3.ExprRef:
            lead, out = tuple(idx[:-n]), tuple(idx[-n:])

            def element(m: z3.BitVecRef, ks: Coords) -> z3.ExprRef:
                positions = [a.position(o, k) for a, o, k in zip(axes, out, ks, strict=True)]
                tests = [a.inside(p) for a, p in zip(axes, positions, strict=True) if not a.always_inside()]
                return _guarded(tests, x.at(lead + tuple(positions)))
            total = _box_sum(c.node, [a.kernel for a in axes], element)
            if constant:
                return total if fixed == 1 else total / z3.RealVal(fixed)
            count = _count(axes[0], out[0], include_pad)
            for a, o in zip(axes[1:], out[1:], strict=True):
                count = count * _count(a, o, include_pad)
            return total / z3.ToReal(z3.BV2Int(count))
        return Lazy.of(c.shape, c.dtype, at)
    return op


WINDOW_OPS: dict[str, Callable[[Call], Any]] = {
    "aten.convolution.default": _convolution,
    **{f"aten.max_pool{n}d_with_indices.default": _max_pool(n) for n in (1, 2, 3)},
    **{f"aten.avg_pool{n}d.default": _avg_pool(n) for n in (1, 2, 3)},
}
