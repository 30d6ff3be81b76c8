"""Arg-extremum folds: the index a running (value, index) pair ends on, torch.argmax/argmin's normal form.

`ArgMaxFrom(v0, i0, base, n, f)` is the index component of the fold over t = 0, 1, …, n-1 (64-bit, unsigned)
of the step

    (b, i) ← (f[t], base + t)   when f[t] > b,   else (b, i)

started at (v0, i0). Its value component is MaxFrom(v0, 0, n, f) (the step is b ← max(b, f[t]) over the
reals), so the index is the first t at which f attains that max, as base + t, or i0 when no f[t] exceeds v0:
torch.argmax's first index on ties. The other kinds differ only in the comparison that selects (`KINDS`):
`ArgMinFrom` selects on f[t] < b, and the `…LastFrom` kinds on ≥ and ≤, which keep the *last* index of a
tie (a kernel written with `>=`: not torch's answer). A fold of d lanes (`ArgMaxFrom4(v0, i0, base, n, f0, …, f3)`,
a loop nvcc unrolled by 4) takes the lanes of step t in turn: step t's lane l is position p = d·t + l of one
sequence, element f_l[t], recorded as base + p (modulo 2^64); it is the one-lane fold of that sequence, whose
length d·n is taken over the integers (no position wraps). Indices wrap modulo 2^64 as the kernel's 64-bit
index register does; the bound n counts steps from 0, so no range can wrap.

Floats are exact reals (DESIGN §3, axiom float.reals): there is no NaN, which torch.argmax would treat as
the maximum; the model's inputs are reals, as for MaxFrom.

All are uninterpreted in the solver. Two of them are identified only by the trusted matcher
(`semantics.properties.arg_reductions`: directly, lane by lane, or by splitting a remainder off, each by
induction on the positions). `fold` is their meaning on concrete values (`semantics.replay`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import z3

from semantics.comprehension import BODY, INDEX

MAX_LANES = 8   # lanes per step of a fold: nvcc unrolls a loop by 4


@dataclass(frozen=True)
class Kind:
    """One arg-extremum fold: its comparison `selects(f[t], b)` that takes a step, and its lanes per step."""

    name: str
    decl: z3.FuncDeclRef
    selects: Callable[[object, object], object]   # on z3 reals and on concrete numbers alike
    lanes: int = 1


def _kinds(name: str, symbol: str, selects: Callable) -> list[Kind]:
    return [Kind(name, z3.Function(symbol + (str(d) if d > 1 else ""), z3.RealSort(), INDEX, INDEX, INDEX,
                                   *[BODY] * d, INDEX), selects, d) for d in range(1, MAX_LANES + 1)]


LANED: dict[tuple[str, int], Kind] = {(k.name, k.lanes): k for k in (
    *_kinds("argmax", "ArgMaxFrom", operator.gt),
    *_kinds("argmax_last", "ArgMaxLastFrom", operator.ge),
    *_kinds("argmin", "ArgMinFrom", operator.lt),
    *_kinds("argmin_last", "ArgMinLastFrom", operator.le),
)}
KINDS: dict[str, Kind] = {name: k for (name, d), k in LANED.items() if d == 1}
BY_DECL: dict[z3.FuncDeclRef, Kind] = {k.decl: k for k in LANED.values()}
DECLS = tuple(BY_DECL)


def arg_over(kind: str, v0: z3.ArithRef, i0: z3.BitVecRef, base: z3.BitVecRef, count: z3.BitVecRef,
             t: z3.BitVecRef, *bodies: z3.ArithRef) -> z3.BitVecRef:
    """The fold of `kind` over t in [0, count) of the lanes body_0(t), …, body_{d-1}(t) in turn, from
    (v0, i0), recording base + d·t + l; t is a 64-bit bound variable used only inside the bodies."""
    return LANED[(kind, len(bodies))].decl(v0, _index(i0), _index(base), _index(count),
                                           *[z3.Lambda([t], body) for body in bodies])


def kind_of(term: z3.ExprRef) -> Kind | None:
    return BY_DECL.get(term.decl()) if z3.is_app(term) else None


def fold(kind: str, v0: object, i0: int, base: int, values: Iterable[tuple[int, object]]) -> int:
    """The fold on concrete numbers: `values` are (t, f[t]) in increasing t, every t of [0, n) or any
    subsequence that keeps the first and the last t at which each value occurs (a sparse replay): the fold
    ends on the first (strict kinds) or last (…_last) t attaining the overall extremum, or on i0 when none
    beats v0, and such a subsequence has the same extremum and the same first and last t attaining it."""
    selects = KINDS[kind].selects
    best, index = v0, i0
    for t, value in values:
        if selects(value, best):
            best, index = value, (base + t) % (1 << 64)
    return index


def _index(value: z3.BitVecRef | int) -> z3.BitVecRef:
    if isinstance(value, int):
        return z3.BitVecVal(value, 64)
    if value.size() != 64:
        raise ValueError(f"an arg-extremum index of {value.size()} bits (indices are 64-bit)")
    return value
