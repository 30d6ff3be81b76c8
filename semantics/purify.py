"""Divisions by constants named in a formula before it goes to the solver: equisatisfiable, much cheaper.

A divider is a large circuit to z3 (tens of seconds per window read of a convolution, a minute for the
question whether a pooling window has an inside tap); a product by a constant is not. `purified` names each
liftable x / d and x mod d by fresh variables constrained so that they can only be the quotient and the
remainder (its theorem below). Trusted: memory safety, the reduction matcher's window obligations and the
-inf padding's settle query decide purified formulas.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

import z3

from semantics import radix
from semantics.linear import Bounds
from semantics.terms import constants, subterms, under_binder

DIVISIONS = (z3.Z3_OP_BUDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BUREM_I)
MEMO_SIZE = 256   # the last formulas purified: a search's winning candidate is asked again by the matcher
_memo: OrderedDict[int, tuple[z3.BoolRef, z3.BoolRef]] = OrderedDict()   # id -> (formula, held; purified)


def by_constant(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The divisions and remainders of `term` by a positive constant."""
    return [t for t in subterms(term) if z3.is_app(t) and t.decl().kind() in DIVISIONS
            and z3.is_bv_value(t.arg(1)) and t.arg(1).as_long() > 0]


def is_quotient(division: z3.ExprRef) -> bool:
    return z3.is_app_of(division, z3.Z3_OP_BUDIV) or z3.is_app_of(division, z3.Z3_OP_BUDIV_I)


def _liftable(division: z3.ExprRef, bounds: Bounds) -> bool:
    """A division `purified` names: by a constant not a power of two (z3 reads those as bit extractions), of a
    dividend free of bound variables whose structural bound X leaves X + d below 2^w."""
    dividend, d = division.arg(0), division.arg(1).as_long()
    return d & (d - 1) != 0 and not under_binder(dividend) and \
        bounds(dividend) + d <= 1 << dividend.size()


def purified(formula: z3.BoolRef) -> z3.BoolRef:
    """`purify` of the formula, remembered for the last MEMO_SIZE formulas (a pure function of the formula)."""
    key = formula.get_id()
    hit = _memo.get(key)
    if hit is not None and hit[0].eq(formula):
        return hit[1]
    result = purify(formula)
    _memo[key] = (formula, result)
    while len(_memo) > MEMO_SIZE:   # the oldest out (each step atomic: search threads purify too)
        try:
            _memo.popitem(last=False)
        except KeyError:
            break
    return result


def purify(formula: z3.BoolRef) -> z3.BoolRef:
    """The formula with its divisions by constants named: equisatisfiable, and a model of it is a model of the
    formula (its free symbols keep their meaning; the names it adds are new). A formula with no such division
    is returned as it is. Otherwise: `opened` first (so the hypothesis's bounds are top-level conjuncts), then
    the exact divisions and mixed-radix digits of `semantics.radix`, then each division left as a fresh q and
    r with x = q·d + r, r < d and q ≤ ⌊X/d⌋ (X a bound of x in every model of the formula,
    `semantics.linear.Bounds`, with X + d ≤ 2^w) at the width w. A divider is a large circuit to z3 (tens of
    seconds per window read of a convolution); a product by a constant is not.

    Theorem (the last step): those constraints have exactly the solution q = x / d, r = x mod d. That pair
    satisfies them (x ≤ X, and q·d + r = x < 2^w does not wrap); and any solution has q·d + r ≤ ⌊X/d⌋·d + d − 1
    < 2^w, so q·d + r = x without wrap-around and 0 ≤ r < d, which Euclid's division makes unique. The
    outermost division is named first, so a division inside its dividend is still a plain subterm (of its
    constraint) when its own turn comes; each step names every occurrence of one (x, d), so the steps end."""
    if not by_constant(formula):
        return formula
    prefix = _unused_prefix(formula)
    formula = radix.named(opened(formula, prefix), f"{prefix}radix")
    bounds = Bounds(formula)
    facts: list[z3.BoolRef] = []
    for n in itertools.count():
        candidates = [t for t in by_constant(z3.And(formula, *facts)) if _liftable(t, bounds)]
        if not candidates:
            break
        outer = max(candidates, key=lambda t: len(by_constant(t.arg(0))))
        dividend, d = outer.arg(0), outer.arg(1).as_long()
        w = dividend.size()
        q, r = z3.BitVec(f"{prefix}division.q{n}", w), z3.BitVec(f"{prefix}division.r{n}", w)
        pairs = [(t, q if is_quotient(t) else r) for t in candidates
                 if t.arg(0).eq(dividend) and t.arg(1).as_long() == d]
        formula = z3.substitute(formula, *pairs)
        facts = [z3.substitute(f, *pairs) for f in facts]
        facts.append(z3.And(dividend == q * d + r, z3.ULT(r, d), z3.ULE(q, bounds(dividend) // d)))
    return z3.And(formula, *facts) if facts else formula


def _unused_prefix(formula: z3.BoolRef) -> str:
    """'' unless the formula already has symbols named like the ones `purified` adds (a purified formula
    purified again): then a prefix that makes them new."""
    names = {str(c) for c in constants(formula)}
    for n in itertools.count():
        prefix = f"p{n}." if n else ""
        if not any(name.startswith((f"{prefix}radix", f"{prefix}division.", f"{prefix}open!")) for name in names):
            return prefix


def opened(formula: z3.BoolRef, prefix: str = "") -> z3.BoolRef:
    """The formula as a conjunction with its outer negations pushed through ∧-free connectives and its negated
    universal quantifiers replaced by fresh symbols (Skolem constants of the existential it denies):
    ¬(a → b) is a ∧ ¬b, ¬¬a is a, ¬(a ∨ b) is ¬a ∧ ¬b, and ¬∀x. p(x) is satisfiable exactly when ¬p(c) is for
    a fresh symbol c (whose model value is a witness x). Equisatisfiable, and a model of it is one of the
    formula. The symbols are named `open!n.x` (n counting in this formula, x the bound variable's name), so
    the result is the same text in every process."""
    parts: list[z3.BoolRef] = []
    todo, count = [formula], itertools.count()
    while todo:
        f = todo.pop()
        if z3.is_and(f):
            todo.extend(reversed(f.children()))
            continue
        g = f.arg(0) if z3.is_not(f) else None
        if g is not None and z3.is_not(g):
            todo.append(g.arg(0))
        elif g is not None and z3.is_implies(g):
            todo += [z3.Not(g.arg(1)), g.arg(0)]
        elif g is not None and z3.is_or(g):
            todo.extend(z3.Not(c) for c in reversed(g.children()))
        elif g is not None and z3.is_quantifier(g) and g.is_forall():
            n = next(count)
            fresh = [z3.Const(f"{prefix}open!{n}.{g.var_name(i)}", g.var_sort(i)) for i in range(g.num_vars())]
            todo.append(z3.Not(z3.substitute_vars(g.body(), *reversed(fresh))))
        else:
            parts.append(f)
    return z3.And(*parts) if len(parts) != 1 else parts[0]
