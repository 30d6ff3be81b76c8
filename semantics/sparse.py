"""Replaying a long Sum/Prod/MaxFrom without enumerating its terms: witness inputs are sparse.

A replayed witness gives each input buffer finitely many explicit elements (the model's table and the
overrides) and one default value for every other element. When a comprehension's bound variable j occurs
only inside the indices of input reads, its body takes the same value at every j whose reads all miss the
explicit elements; so the comprehension is its *special* terms (some read hits an explicit element), each
evaluated, plus `count - #special` copies of the term at one other j. Exactness needs every special j:
each read index, with the witness's thread and block put in, is proved affine in j on [lo, hi) (one solver
call, remembered), and a + s·j ≡ p (mod 2^64) is solved by arithmetic for each explicit element p.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import z3

from semantics.comprehension import is_comprehension
from semantics.terms import constants, mentions

MAX_SPECIAL = 4096
_AFFINE: dict[tuple[int, int, int], tuple[z3.ExprRef, tuple[int, int] | None]] = {}


def reads_of(body: z3.ExprRef, j: z3.BitVecRef) -> list[z3.ExprRef] | None:
    """The input reads F(idx(j)) of `body`, or None when j occurs elsewhere (the body is then not constant
    between the special points)."""
    reads, todo, seen = [], [body], set()
    while todo:   # a reduction nested in the body without j (a row's mean in Σ (x - mean)²) is constant in j
        t = todo.pop()
        if t.get_id() in seen or (is_comprehension(t) and not mentions(t, j)):
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED and t.num_args() == 1 and z3.is_bv(t.arg(0)) \
                and mentions(t.arg(0), j):
            reads.append(t)
        todo.extend([t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else [])
    stand_ins = [(r, z3.FreshConst(r.sort(), "read")) for r in reads]
    rest = z3.substitute(body, *stand_ins) if stand_ins else body
    return None if mentions(rest, j) else reads


def affine(index: z3.BitVecRef, j: z3.BitVecRef, lo: int, hi: int) -> tuple[int, int] | None:
    """(a, s) with index(j) = a + s·j (mod 2^64) for every j in [lo, hi), proved; index has no other free
    symbol."""
    key = (index.get_id(), lo, hi)
    if key in _AFFINE:
        return _AFFINE[key][1]
    a = z3.simplify(z3.substitute(index, (j, z3.BitVecVal(0, 64))))
    b = z3.simplify(z3.substitute(index, (j, z3.BitVecVal(1, 64))))
    result = None
    if z3.is_bv_value(a) and z3.is_bv_value(b) and index.size() == 64:
        s = (b.as_long() - a.as_long()) % (1 << 64)
        solver = z3.Solver()
        solver.set("timeout", 10000)
        solver.add(z3.ULE(lo, j), z3.ULT(j, hi), index != a.as_long() + s * j)
        if solver.check() == z3.unsat:
            result = (a.as_long(), s)
    _AFFINE[key] = (index, result)  # the term is kept alive with its id
    return result


def solutions(a: int, s: int, p: int, lo: int, hi: int) -> list[int] | None:
    """Every j in [lo, hi) with a + s·j ≡ p (mod 2^64); None when there are too many to list."""
    modulus = 1 << 64
    if s == 0:
        return None if (a - p) % modulus == 0 else []
    g = math.gcd(s, modulus)
    if (p - a) % g:
        return []
    period = modulus // g
    j0 = ((p - a) // g * pow(s // g, -1, period)) % period if period > 1 else 0
    first = lo + (j0 - lo) % period
    found = list(range(first, hi, period))
    return found if len(found) <= MAX_SPECIAL else None


def special_indices(body: z3.ExprRef, j: z3.BitVecRef, lo: int, hi: int, concrete: Callable,
                    explicit: Callable[[z3.FuncDeclRef], list[int] | None]) -> list[int] | None:
    """The j in [lo, hi) at which some read of `body` hits an explicit element. `concrete(term)` puts the
    witness's values in for the term's free symbols other than j; `explicit(decl)` lists a buffer's
    explicit elements (None: its other elements have no one value)."""
    reads = reads_of(body, j)
    if reads is None:
        return None
    special: set[int] = set()
    for read in reads:
        form = affine(concrete(read.arg(0)), j, lo, hi)
        if form is None:
            return None
        points = explicit(read.decl())
        if points is None:
            return None
        for p in points:
            found = solutions(*form, p, lo, hi)
            if found is None:
                return None
            special.update(found)
            if len(special) > MAX_SPECIAL:
                return None
    return sorted(special)


def other_index(special: list[int], lo: int, hi: int) -> int | None:
    """The least j in [lo, hi) that is not special, if any."""
    taken = set(special)
    return next((j for j in range(lo, min(hi, lo + len(special) + 1)) if j not in taken), None)


def free_symbols(term: z3.ExprRef, j: z3.BitVecRef) -> list[z3.ExprRef]:
    return [c for c in constants(term) if not z3.eq(c, j)]
