"""Sum and max comprehensions over integer ranges: the normal form reductions meet in.

`Sum(lo, hi, f)` is Σ_{lo ≤ j < hi} f[j] and `MaxFrom(init, lo, hi, f)` is max(init, f[lo], …, f[hi-1]),
with bounds as 64-bit vectors (unsigned) and `f` a z3 lambda from a 64-bit index to a real. Both are
uninterpreted in the solver: two comprehensions are identified only by the trusted matcher
(`semantics/properties/reductions.py`), which proves a reindexing between their domains and the equality
of their bodies, and then replaces both by one symbol. Everything else about them (commutativity,
associativity of + and max over reals) is used there, nowhere else.
"""

from __future__ import annotations

import z3

INDEX = z3.BitVecSort(64)
BODY = z3.ArraySort(INDEX, z3.RealSort())

SUM = z3.Function("Sum", INDEX, INDEX, BODY, z3.RealSort())
MAX_FROM = z3.Function("MaxFrom", z3.RealSort(), INDEX, INDEX, BODY, z3.RealSort())
MIN_FROM = z3.Function("MinFrom", z3.RealSort(), INDEX, INDEX, BODY, z3.RealSort())
COMPREHENSIONS = (SUM, MAX_FROM, MIN_FROM)


def sum_over(lo: z3.BitVecRef | int, hi: z3.BitVecRef | int, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    """Σ_{lo ≤ j < hi} body, with j a 64-bit bound variable (a z3 constant used only inside body)."""
    return SUM(_index(lo), _index(hi), z3.Lambda([j], body))


def max_over(init: z3.ArithRef, lo, hi, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    """max(init, max_{lo ≤ j < hi} body)."""
    return MAX_FROM(init, _index(lo), _index(hi), z3.Lambda([j], body))


def min_over(init: z3.ArithRef, lo, hi, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    return MIN_FROM(init, _index(lo), _index(hi), z3.Lambda([j], body))


def _index(value: z3.BitVecRef | int) -> z3.BitVecRef:
    return z3.BitVecVal(value, 64) if isinstance(value, int) else value


def is_comprehension(term: z3.ExprRef) -> bool:
    return z3.is_app(term) and term.decl() in COMPREHENSIONS


def scaled_sum(term: z3.ExprRef) -> tuple[z3.ArithRef, z3.ExprRef] | None:
    """(c, S) when `term` is the Sum S, or S times a rational constant c (how z3 writes a mean, and what
    remains of one after it distributes a constant over a sum of several Sums)."""
    if z3.is_app(term) and term.decl() == SUM:
        return z3.RealVal(1), term
    if z3.is_mul(term) and term.num_args() == 2:
        for c, s in (term.children(), reversed(term.children())):
            if z3.is_rational_value(c) and z3.is_app(s) and s.decl() == SUM:
                return c, s
    return None
