"""Lazy symbolic tensors: a shape, a dtype, and a function from an index tuple to an element term.

Reference tensors are never enumerated (KernelBench tensors have billions of elements): an op builds a
new function from its operands' functions, so a layout op only rewrites index terms and an elementwise
op only combines element terms. Index terms are 64-bit bit-vectors (DESIGN §3); an index into a dim of
size 1 is the constant 0, and flattening or unflattening skips multiplications by 1 and dims of size 1,
so that the terms stay as small as the ones a kernel computes. Element terms are z3 Reals for float
dtypes (exact arithmetic), bit-vectors of the dtype's width for integers, and Booleans for bool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

from semantics.torch.graph import FLOAT_DTYPES, INT_WIDTHS

Index = tuple[z3.BitVecRef, ...]


class Unsupported(Exception):
    """A reference op or feature outside the modelled fragment; the message names it."""


@dataclass(frozen=True)
class Missing:
    """An unmodelled result of an op with several results (max.dim's indices): harmless until a node
    picks it, which raises Unsupported with `why`."""

    why: str


def bv(n: int) -> z3.BitVecRef:
    return z3.BitVecVal(n, 64)


def element_sort(dtype: str) -> z3.SortRef:
    """The solver sort of one element of a tensor of `dtype`."""
    if dtype in FLOAT_DTYPES:
        return z3.RealSort()
    if dtype in INT_WIDTHS:
        return z3.BitVecSort(INT_WIDTHS[dtype])
    if dtype == "bool":
        return z3.BoolSort()
    raise Unsupported(f"dtype {dtype}")


def converter(src: str, dst: str) -> Callable[[z3.ExprRef], z3.ExprRef]:
    """How a `src` element becomes a `dst` element: the identity between floats (exact reals), exact for
    integer and bool to float, two's-complement extension or wrap-around between integer widths. Raises
    Unsupported (when the op is built, not when a term is) for float to integer."""
    if src == dst or (src in FLOAT_DTYPES and dst in FLOAT_DTYPES):
        return lambda t: t
    if dst == "bool":
        return lambda t: t != _zero(src)
    if src == "bool":
        return lambda t: z3.If(t, _one(dst), _zero(dst))
    if src in INT_WIDTHS and dst in FLOAT_DTYPES:
        return lambda t: z3.ToReal(z3.BV2Int(t, is_signed=src != "uint8"))
    if src in INT_WIDTHS and dst in INT_WIDTHS:
        grow = INT_WIDTHS[dst] - INT_WIDTHS[src]
        if grow > 0:
            return lambda t: (z3.ZeroExt if src == "uint8" else z3.SignExt)(grow, t)
        return lambda t: z3.Extract(INT_WIDTHS[dst] - 1, 0, t) if grow < 0 else t
    raise Unsupported(f"conversion from {src} to {dst}")


def _zero(dtype: str) -> z3.ExprRef:
    return z3.RealVal(0) if dtype in FLOAT_DTYPES else z3.BitVecVal(0, element_sort(dtype))


def _one(dtype: str) -> z3.ExprRef:
    return z3.RealVal(1) if dtype in FLOAT_DTYPES else z3.BitVecVal(1, element_sort(dtype))


def _memo(fn: Callable[[Index], z3.ExprRef]) -> Callable[[Index], z3.ExprRef]:
    """Cache by index terms: a node used k times by the next one is built once, not k^depth times."""
    cache: dict[tuple[int, ...], tuple[Index, z3.ExprRef]] = {}

    def at(idx: Index) -> z3.ExprRef:
        key = tuple(i.get_id() for i in idx) + ((idx.flat.get_id(),) if isinstance(idx, _Unflat) else ())
        if key not in cache:
            cache[key] = (idx, fn(idx))  # keeping idx alive keeps its ids from being reused
        return cache[key][1]

    return at


@dataclass(frozen=True)
class Lazy:
    shape: tuple[int, ...]
    dtype: str
    at: Callable[[Index], z3.ExprRef]

    @staticmethod
    def of(shape: Sequence[int], dtype: str, fn: Callable[[Index], z3.ExprRef]) -> Lazy:
        return Lazy(tuple(shape), dtype, _memo(fn))

    def flat(self, e: z3.BitVecRef) -> z3.ExprRef:
        """The element at row-major flat index `e` (assumed 0 <= e < numel)."""
        return self.at(unflatten(e, self.shape))


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


class _Unflat(tuple):
    """An index tuple made by `unflatten`, remembering the linear index it came from, so that flattening
    it again in the same shape gives back that index (X(e), not X(e / 500 * 500 + e % 500))."""

    flat: z3.BitVecRef
    shape: tuple[int, ...]


def flatten(idx: Index, shape: Sequence[int]) -> z3.BitVecRef:
    """Row-major linear index of `idx` in `shape` (index terms that are the constant 0 are left out)."""
    if isinstance(idx, _Unflat) and idx.shape == tuple(shape):
        return idx.flat
    total, stride = None, 1
    for i, d in zip(reversed(idx), reversed(shape), strict=True):
        if d != 1 and not (z3.is_bv_value(i) and i.as_long() == 0):   # a constant-0 index adds nothing
            term = i if stride == 1 else i * bv(stride)
            total = term if total is None else term + total
        stride *= d
    return bv(0) if total is None else total


def unflatten(e: z3.BitVecRef, shape: Sequence[int]) -> Index:
    """The index tuple of row-major linear index `e` (0 <= e < numel(shape) assumed, so the outermost
    non-trivial dim needs no remainder)."""
    outer = next((k for k, d in enumerate(shape) if d != 1), len(shape))
    idx, stride = [], numel(shape)
    for k, d in enumerate(shape):
        stride //= d
        if d == 1:
            idx.append(bv(0))
            continue
        q = e if stride == 1 else z3.UDiv(e, bv(stride))
        idx.append(q if k == outer else z3.URem(q, bv(d)))
    result = _Unflat(idx)
    result.flat, result.shape = e, tuple(shape)
    return result


def from_storage(read: Callable[[z3.BitVecRef], z3.ExprRef], shape: Sequence[int], dtype: str) -> Lazy:
    """A contiguous tensor whose element at flat index f is read(f)."""
    return Lazy.of(shape, dtype, lambda idx: read(flatten(idx, shape)))


def constant(term: z3.ExprRef, shape: Sequence[int], dtype: str) -> Lazy:
    return Lazy.of(shape, dtype, lambda idx: term)


def expand(t: Lazy, shape: Sequence[int]) -> Lazy:
    """Broadcast `t` to `shape`: the index into a broadcast dim is 0."""
    shape = tuple(shape)
    if t.shape == shape:
        return t
    offset = len(shape) - len(t.shape)
    if offset < 0 or any(d not in (1, shape[offset + k]) for k, d in enumerate(t.shape)):
        raise Unsupported(f"cannot expand shape {t.shape} to {shape}")
    return Lazy.of(shape, t.dtype, lambda idx: t.at(tuple(
        bv(0) if d == 1 else idx[offset + k] for k, d in enumerate(t.shape))))


def elementwise(fn: Callable[..., z3.ExprRef], operands: Sequence[Lazy], shape: Sequence[int],
                dtype: str, compute: str | None = None) -> Lazy:
    """fn applied to the operands' elements, each broadcast to `shape` and converted to the `compute`
    dtype (default: the result dtype, as torch's type promotion does)."""
    parts = [(expand(o, shape), converter(o.dtype, compute or dtype)) for o in operands]
    return Lazy.of(shape, dtype, lambda idx: fn(*(conv(p.at(idx)) for p, conv in parts)))


def permute(t: Lazy, dims: Sequence[int]) -> Lazy:
    dims = [d % len(t.shape) for d in dims] if t.shape else []
    if sorted(dims) != list(range(len(t.shape))):
        raise Unsupported(f"permutation {dims} of rank {len(t.shape)}")
    where = {d: k for k, d in enumerate(dims)}
    return Lazy.of([t.shape[d] for d in dims], t.dtype,
                   lambda idx: t.at(tuple(idx[where[j]] for j in range(len(dims)))))


def reshape(t: Lazy, shape: Sequence[int]) -> Lazy:
    """A view with another shape: the same row-major linear index. An index that came from unflattening a
    linear index e is re-unflattened from e directly (chains of views fold back to X(e)); otherwise dims
    are matched in groups whose sizes multiply to the same number, so only the dims that really merge or
    split get a flatten/unflatten and the others keep their index terms."""
    shape = _resolve_shape(shape, numel(t.shape))
    if shape == t.shape:
        return t
    if numel(shape) == 0:
        raise Unsupported("reshape of an empty tensor")
    groups = _groups(t.shape, shape)

    def at(idx: Index) -> z3.ExprRef:
        if isinstance(idx, _Unflat) and idx.shape == shape:   # a reshape keeps the linear index
            return t.at(unflatten(idx.flat, t.shape))
        if len(groups) == 1:
            return t.at(unflatten(flatten(idx, shape), t.shape))
        src: list[z3.BitVecRef] = []
        for (s0, s1), (o0, o1) in groups:
            src.extend(unflatten(flatten(idx[o0:o1], shape[o0:o1]), t.shape[s0:s1]))
        return t.at(tuple(src))

    return Lazy.of(shape, t.dtype, at)


def _resolve_shape(shape: Sequence[int], total: int) -> tuple[int, ...]:
    shape = list(shape)
    if shape.count(-1) == 1:
        rest = numel([d for d in shape if d != -1])
        shape[shape.index(-1)] = total // rest if rest else 0
    if numel(shape) != total or any(d < 0 for d in shape):
        raise Unsupported(f"reshape of {total} elements to {shape}")
    return tuple(shape)


def _groups(src: tuple[int, ...], dst: tuple[int, ...]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Pairs of (source dims, result dims) ranges with equal products; dims of size 1 start their own."""
    out, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        i1, j1 = i, j
        p, q = 1, 1
        if i1 < len(src) and (j1 == len(dst) or src[i1] == 1):
            p *= src[i1]
            i1 += 1
        elif j1 < len(dst) and (i1 == len(src) or dst[j1] == 1):
            q *= dst[j1]
            j1 += 1
        else:
            p, q, i1, j1 = src[i1], dst[j1], i1 + 1, j1 + 1
            while p != q:
                if p < q:
                    p, i1 = p * src[i1], i1 + 1
                else:
                    q, j1 = q * dst[j1], j1 + 1
        out.append(((i, i1), (j, j1)))
        i, j = i1, j1
    return out


def _shift(i: z3.BitVecRef, offset: int) -> z3.BitVecRef:
    return i + bv(offset) if offset > 0 else i - bv(-offset) if offset < 0 else i


def slice_dim(t: Lazy, dim: int, start: int | None, end: int | None, step: int) -> Lazy:
    if step <= 0:
        raise Unsupported(f"slice step {step}")
    dim %= len(t.shape)
    first, stop, _ = slice(start, end, step).indices(t.shape[dim])
    length = max(0, -(-(stop - first) // step))
    shape = t.shape[:dim] + (length,) + t.shape[dim + 1:]

    def at(idx: Index) -> z3.ExprRef:
        i = idx[dim] if step == 1 else idx[dim] * bv(step)
        return t.at(idx[:dim] + (_shift(i, first),) + idx[dim + 1:])

    return Lazy.of(shape, t.dtype, at)


def pad(t: Lazy, widths: Sequence[int], fill: z3.ExprRef) -> Lazy:
    """constant_pad_nd: `widths` holds (before, after) pairs from the last dim backwards, each >= 0; an
    index i of a padded dim reads t at i - before when that is inside t, else `fill`. (A negative width
    crops, a slice: not modelled here.)"""
    if len(widths) % 2 or len(widths) // 2 > len(t.shape) or any(w < 0 for w in widths):
        raise Unsupported(f"constant padding {list(widths)} of shape {list(t.shape)}")
    before = {len(t.shape) - 1 - k: widths[2 * k] for k in range(len(widths) // 2)}
    after = {len(t.shape) - 1 - k: widths[2 * k + 1] for k in range(len(widths) // 2)}
    shape = tuple(n + before.get(d, 0) + after.get(d, 0) for d, n in enumerate(t.shape))

    def at(idx: Index) -> z3.ExprRef:
        inner, tests = [], []
        for d, i in enumerate(idx):
            if before.get(d, 0) or after.get(d, 0):
                i = _shift(i, -before.get(d, 0))
                tests.append(z3.ULT(i, bv(t.shape[d])))   # below 0 it wraps, so one test covers both ends
            inner.append(i)
        value = t.at(tuple(inner))
        return z3.If(z3.And(tests), value, fill) if tests else value

    return Lazy.of(shape, t.dtype, at)


def select(t: Lazy, dim: int, index: int) -> Lazy:
    dim %= len(t.shape)
    index %= t.shape[dim]
    return Lazy.of(t.shape[:dim] + t.shape[dim + 1:], t.dtype,
                   lambda idx: t.at(idx[:dim] + (bv(index),) + idx[dim:]))


def flip(t: Lazy, dims: Sequence[int]) -> Lazy:
    """Reversal along `dims`: index i reads n-1-i."""
    flipped = {d % len(t.shape) for d in dims} if t.shape else set()
    return Lazy.of(t.shape, t.dtype, lambda idx: t.at(tuple(
        bv(t.shape[k] - 1) - i if k in flipped and t.shape[k] != 1 else i for k, i in enumerate(idx))))


def cat(ts: Sequence[Lazy], dim: int) -> Lazy:
    """Concatenation: the element comes from the part whose range holds the index along `dim`."""
    parts = [t for t in ts if t.shape != (0,)]   # torch lets a 1-d empty tensor join any cat
    if not parts:
        raise Unsupported("cat of empty tensors")
    dim %= len(parts[0].shape)
    dtype = parts[0].dtype
    if any(p.dtype != dtype or p.shape[:dim] + p.shape[dim + 1:] != parts[0].shape[:dim] +
           parts[0].shape[dim + 1:] for p in parts):
        raise Unsupported("cat of tensors of different dtypes or shapes")
    starts = [0]
    for p in parts:
        starts.append(starts[-1] + p.shape[dim])
    shape = parts[0].shape[:dim] + (starts[-1],) + parts[0].shape[dim + 1:]

    def at(idx: Index) -> z3.ExprRef:
        i = idx[dim]
        term = parts[-1].at(idx[:dim] + (_shift(i, -starts[-2]),) + idx[dim + 1:])
        for p, s0, s1 in reversed(list(zip(parts[:-1], starts, starts[1:], strict=False))):
            term = z3.If(z3.ULT(i, bv(s1)), p.at(idx[:dim] + (_shift(i, -s0),) + idx[dim + 1:]), term)
        return term

    return Lazy.of(shape, dtype, at)
