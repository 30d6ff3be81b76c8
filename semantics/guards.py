"""Tests of index terms against numerals, read as intervals of one coordinate (`semantics.linear` forms).

A padding guard `ih >= 0 && ih < H` reaches the solver as nvcc wrote it (`(ih - 2) >> 9 == 0` in 32 bits, an
`or` of such tests) and as the reference wrote it (one unsigned 64-bit compare of a wrapped position), and an
`ow < OW` test bounds a coordinate made of two ids. Read as intervals, those say the same thing in the same
words. Definitions (forms, atoms and their intervals as in `semantics.linear`):

* A test says low ≤ t < high of a term t and numerals (t < n, t ≤ n, ¬(n ≤ t), n ≤ t and their negations;
  Extract(w−1, l, t) = 0, i.e. t < 2^l; a | b = 0, i.e. a = 0 and b = 0; and, read by `state` only, the
  signed comparisons with n ≥ 0, which say the same of a t whose exact form lies below 2^(w−1)).
* Guard rule: for a test low ≤ t < high with M(t) = v + c for one atom v (c centred): if v + c, over v's
  interval, stays in (−2^w, 2^w) and its wrapped values (v + c < 0, read as v + c + 2^w) are ≥ high, the
  test holds exactly when v ∈ [max(low − c, −c), high − 1 − c] (`bounds_of`); a guard every conjunct of which
  is such a test is then equivalent to lo ≤ v ∧ v ≤ hi for each atom it bounds (`canonical`).
* Stated forms (`state`): a top-level conjunct of the formula that tests a term t with an exact form f of
  two or more atoms bounds f's value (t's) in every model of the formula; `Forms.range` then narrows any form
  holding f.
"""

from __future__ import annotations

from collections.abc import Iterator

import z3

from semantics.linear import Forms, Interval, conjuncts


def state(forms: Forms, formula: z3.BoolRef) -> None:
    """Take the intervals the formula's top-level conjuncts state of forms of two or more atoms (an `ow <
    OW` test of ow = 256·ctaid.x + tid.x), read as its guard rule reads tests, signed tests of terms whose
    exact forms lie below 2^(w−1) included: true in every model of the formula. Each form is read before
    any is stated, so no interval rests on itself. The caller keeps those conjuncts as they are."""
    found = []
    for c in conjuncts(formula):
        for test in _tests(c, signed=True):
            f = None if test is None else forms.natural(test[0])
            if f is None or len(f.atoms) < 2 or \
                    (test[3] and not forms.within(f, 0, 1 << (test[0].size() - 1))):
                continue
            lo, hi = forms.range(f)
            found.append((f, (max(lo, test[1]), min(hi, test[2] - 1))))
    forms.stated += found


def bounds_of(forms: Forms, guard: z3.BoolRef) -> dict[int, tuple[z3.BitVecRef, Interval]]:
    """The intervals the guard's conjuncts state of single atoms (the module docstring's guard rule), for
    the conjuncts it reads; the others say nothing here."""
    return _intervals(forms, guard, strict=False) or {}


def canonical(forms: Forms, guard: z3.BoolRef) -> z3.BoolRef | None:
    """The guard as lo ≤ v ∧ v ≤ hi per atom (by id order), when every conjunct is a test the guard rule
    reads: equivalent to it wherever the atoms lie in their intervals. Two guards that test the same
    coordinates the same way become one term (a padding test written `ih >= 0 && ih < H` in 32 bits and
    as one unsigned 64-bit compare)."""
    found = _intervals(forms, guard, strict=True)
    if not found:
        return None
    parts = []
    for _, (v, (lo, hi)) in sorted(found.items()):
        if lo > hi:
            return z3.BoolVal(False)
        parts += [z3.ULE(z3.BitVecVal(lo, v.size()), v), z3.ULE(v, z3.BitVecVal(hi, v.size()))]
    return z3.And(parts)


def _intervals(forms: Forms, guard: z3.BoolRef, strict: bool) -> dict[int, tuple[z3.BitVecRef, Interval]] | None:
    found: dict[int, tuple[z3.BitVecRef, Interval]] = {}
    for test in _tests(guard):
        read = None if test is None else _interval(forms, *test[:3])
        if read is None:
            if strict:
                return None
            continue
        v, (lo, hi) = read
        old = found.get(v.get_id(), (v, (lo, hi)))[1]
        found[v.get_id()] = v, (max(old[0], lo), min(old[1], hi))
    return found


def _interval(forms: Forms, t: z3.BitVecRef, low: int, high: int) -> tuple[z3.BitVecRef, Interval] | None:
    """(v, [a, b]) when low ≤ t < high (unsigned) says exactly v ∈ [a, b] for t ≡ v + c (mod 2^w) with v in
    its interval: where v + c cannot wrap, or wraps only downward (below 0) to values ≥ high."""
    f = forms.modular(t).centred(t.size())
    if len(f.atoms) != 1 or f.atoms[0][1] != 1:
        return None
    v, c, full = forms.atoms[f.atoms[0][0]], f.constant, 1 << t.size()
    lo, hi = forms.bounds.low(v), forms.bounds(v)
    if not (-full < lo + c and hi + c < full) or (lo + c < 0 and lo + c + full < high):
        return None
    return v, (max(lo, low - c, -c), min(hi, high - 1 - c))


def _tests(guard: z3.BoolRef, signed: bool = False) -> Iterator[tuple[z3.BitVecRef, int, int, bool] | None]:
    """(t, low, high, is_signed) for each conjunct of the guard that says low ≤ t < high (numerals; unsigned:
    t < n, t ≤ n, ¬(n ≤ t), n ≤ t, Extract(w−1, l, t) = 0 i.e. t < 2^l, a | b = 0; with `signed`, also the
    signed t < n, t ≤ n, ¬(n ≤ t), n ≤ t for n ≥ 0, which say the same of a t below 2^(w−1)), None for any
    other conjunct."""
    todo = list(conjuncts(guard))
    while todo:
        c = todo.pop()
        negated = z3.is_not(c)
        inner = c.arg(0) if negated else c
        numeric = [z3.is_bv_value(a) for a in inner.children()] if z3.is_app(inner) and inner.num_args() == 2 \
            else []
        kind = inner.decl().kind() if z3.is_app(inner) else None
        found = _comparison(kind, negated, numeric, inner, signed)
        if found is not None:
            yield found
        elif not negated and z3.is_eq(c) and numeric == [False, True] and c.arg(1).as_long() == 0 and \
                z3.is_app_of(c.arg(0), z3.Z3_OP_BOR):
            todo += [a == 0 for a in c.arg(0).children()]
        elif not negated and z3.is_eq(c) and numeric == [False, True] and c.arg(1).as_long() == 0 and \
                z3.is_app_of(c.arg(0), z3.Z3_OP_EXTRACT) and c.arg(0).params()[0] == c.arg(0).arg(0).size() - 1:
            yield c.arg(0).arg(0), 0, 1 << c.arg(0).params()[1], False
        elif not z3.is_true(c):
            yield None


COMPARISONS = {z3.Z3_OP_ULT: (True, False), z3.Z3_OP_ULEQ: (False, False), z3.Z3_OP_SLT: (True, True),
               z3.Z3_OP_SLEQ: (False, True)}   # kind -> (strict, signed)


def _comparison(kind, negated: bool, numeric: list[bool], c: z3.BoolRef,
                signed: bool) -> tuple[z3.BitVecRef, int, int, bool] | None:
    """A comparison of a term with a numeral (either side, possibly negated) as low ≤ t < high."""
    if kind not in COMPARISONS or numeric not in ([False, True], [True, False]):
        return None
    strict, is_signed = COMPARISONS[kind]
    if is_signed and not signed:
        return None
    t, n = (c.arg(0), c.arg(1).as_long()) if numeric == [False, True] else (c.arg(1), c.arg(0).as_long())
    w = t.size()
    if is_signed:
        n = n - (1 << w) if n >> (w - 1) else n
        if n < 0:
            return None
    term_left = numeric == [False, True]
    # the interval of t the comparison says, each of the four shapes (t < n, t ≤ n, n < t, n ≤ t) negated or not
    if term_left != negated:   # t < n or t ≤ n; or ¬(n < t), ¬(n ≤ t)
        high = n if strict != negated else n + 1
        return t, 0, high, is_signed
    low = n + 1 if strict != negated else n
    return t, low, 1 << (w - 1) if is_signed else 1 << w, is_signed
