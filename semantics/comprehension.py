"""Sum, product and max comprehensions over integer ranges: the normal form reductions meet in.

`Sum(lo, hi, f)` is Σ_{lo ≤ j < hi} f[j], `Prod(lo, hi, f)` is Π_{lo ≤ j < hi} f[j] (1 when empty) and
`MaxFrom(init, lo, hi, f)` is max(init, f[lo], …, f[hi-1]), with bounds as 64-bit vectors (unsigned) and `f`
a z3 lambda from a 64-bit index to a real. All are uninterpreted in the solver: two comprehensions are
identified only by the trusted matchers (`semantics/properties/reductions.py` for Sum/MaxFrom/MinFrom,
`semantics/properties/prefix.py` for running sums and products against prefixes), which prove a
reindexing between their domains and the equality of their bodies, and then replace both by one symbol.
Everything else about them (commutativity, associativity of +, * and max over reals) is used there, nowhere
else. A product is not a sum: its neutral element is 1, not 0, and no constant distributes over it; code
written for Sum (zero tails, coefficients, splitting into parts) must leave Prod alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

INDEX = z3.BitVecSort(64)
BODY = z3.ArraySort(INDEX, z3.RealSort())

SUM = z3.Function("Sum", INDEX, INDEX, BODY, z3.RealSort())
MAX_FROM = z3.Function("MaxFrom", z3.RealSort(), INDEX, INDEX, BODY, z3.RealSort())
MIN_FROM = z3.Function("MinFrom", z3.RealSort(), INDEX, INDEX, BODY, z3.RealSort())
PROD = z3.Function("Prod", INDEX, INDEX, BODY, z3.RealSort())
COMPREHENSIONS = (SUM, MAX_FROM, MIN_FROM, PROD)


@dataclass(frozen=True)
class Monoid:
    """How a comprehension combines its terms: Sum by + (0 when empty), Prod by · (1 when empty), max and min
    (no neutral element). All are commutative and associative over the reals, which is all the kernel's rules
    about comprehensions (`semantics.proof.sums`) use."""

    name: str
    neutral: int | None
    combine: Callable[[list[z3.ArithRef]], z3.ArithRef]

    def of(self, terms: list[z3.ArithRef]) -> z3.ArithRef:
        """The terms combined (the neutral element when there are none, the term itself when one: a sum of one
        argument is no SMT-LIB term cvc5 reads). A max or min of no terms has no value: `ValueError`."""
        if not terms and self.neutral is None:
            raise ValueError(f"{self.name} of no terms")
        return z3.RealVal(self.neutral) if not terms else terms[0] if len(terms) == 1 else self.combine(terms)


MONOIDS = {SUM.name(): Monoid("Sum", 0, z3.Sum), PROD.name(): Monoid("Prod", 1, z3.Product)}


def _extremum(greater: bool) -> Callable[[list[z3.ArithRef]], z3.ArithRef]:
    """max (or min) of one or more real terms, as a tree of If(a >= b, a, b) (If(a <= b, a, b))."""
    def combine(terms: list[z3.ArithRef]) -> z3.ArithRef:
        out = terms[0]
        for t in terms[1:]:
            out = z3.If(out >= t, out, t) if greater else z3.If(out <= t, out, t)
        return out
    return combine


# MaxFrom(init, lo, hi, f) and MinFrom: max (min) is commutative, associative and idempotent over the reals;
# they have no neutral element (the init takes its place, and `reindex_lanes` asks that both inits are equal)
EXTREMA = {MAX_FROM.name(): Monoid("MaxFrom", None, _extremum(True)),
           MIN_FROM.name(): Monoid("MinFrom", None, _extremum(False))}


def sum_over(lo: z3.BitVecRef | int, hi: z3.BitVecRef | int, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    """Σ_{lo ≤ j < hi} body, with j a 64-bit bound variable (a z3 constant used only inside body)."""
    return SUM(_index(lo), _index(hi), z3.Lambda([j], body))


def prod_over(lo: z3.BitVecRef | int, hi: z3.BitVecRef | int, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    """Π_{lo ≤ j < hi} body (1 when lo ≥ hi), with j a 64-bit bound variable."""
    return PROD(_index(lo), _index(hi), z3.Lambda([j], body))


def max_over(init: z3.ArithRef, lo, hi, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    """max(init, max_{lo ≤ j < hi} body)."""
    return MAX_FROM(init, _index(lo), _index(hi), z3.Lambda([j], body))


def min_over(init: z3.ArithRef, lo, hi, j: z3.BitVecRef, body: z3.ArithRef) -> z3.ArithRef:
    return MIN_FROM(init, _index(lo), _index(hi), z3.Lambda([j], body))


def body_at(body: z3.ExprRef, index: z3.BitVecRef) -> z3.ArithRef:
    """A comprehension's body (its last argument) at `index`. It is a lambda, or, once the simplifier has seen
    a lambda whose body is constant (an inner Sum whose guard fails at every index), a constant array."""
    if z3.is_quantifier(body):
        return z3.substitute_vars(body.body(), index)
    return z3.simplify(z3.Select(body, index))


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


def without_empty(term: z3.ExprRef) -> z3.ExprRef:
    """`term` with every comprehension over a range of numerals lo ≥ hi replaced by its value there, by the
    definitions above: a Sum is 0, a Prod 1, a MaxFrom or MinFrom its init (innermost first)."""
    empty = []
    for t in _subterms(term):
        if is_comprehension(t):
            lo, hi = (t.arg(1), t.arg(2)) if t.decl() in (MAX_FROM, MIN_FROM) else (t.arg(0), t.arg(1))
            if z3.is_bv_value(lo) and z3.is_bv_value(hi) and lo.as_long() >= hi.as_long():
                empty.append((t, t.arg(0) if t.decl() in (MAX_FROM, MIN_FROM)
                              else z3.RealVal(0) if t.decl() == SUM else z3.RealVal(1)))
    return z3.substitute(term, *empty) if empty else term


def _subterms(term: z3.ExprRef) -> list[z3.ExprRef]:
    seen, order, todo = set(), [], [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        order.append(t)
        todo.extend([t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else [])
    return order
