"""Accumulation loops: a float register updated as `acc ⊕ T(k)` each iteration becomes a comprehension.

From one generic run of the loop body (every carried register a fresh header symbol), a register whose
back-edge value is `a + T` (T free of `a`) is a sum accumulator and one whose value is a max-tree with `a`
as exactly one leaf is a max accumulator (min likewise). At the start of iteration k it then holds
`acc₀ + Sum(0, k, λj. T(j))` or `MaxFrom(acc₀, 0, k, λj. T(j))`: exact, not an approximation — by induction
on k, since Sum/MaxFrom over [0, k+1) is the value over [0, k) combined with T(k). Anything else is not
summarised (the caller makes it opaque).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from semantics.comprehension import MAX_FROM, MIN_FROM, SUM, max_over, min_over, sum_over
from semantics.ptx.machine import simplify
from semantics.terms import mentions


@dataclass(frozen=True)
class Accumulator:
    kind: str               # 'sum' | 'max' | 'min'
    header: z3.ArithRef     # the generic run's symbol for the register at the loop header
    step: z3.ArithRef       # T: what one iteration combines in, over the generic run's header symbols
    next_value: z3.ArithRef  # the back-edge value in the generic run


def _leaves(term: z3.ExprRef, pick_greater: bool) -> list[z3.ExprRef]:
    """Flatten a tree of If(x >= y, x, y) (max) or If(x <= y, x, y) (min) nodes."""
    kind = z3.Z3_OP_GE if pick_greater else z3.Z3_OP_LE
    if z3.is_app_of(term, z3.Z3_OP_ITE):
        cond, a, b = term.children()
        if z3.is_app_of(cond, kind) and z3.eq(cond.arg(0), a) and z3.eq(cond.arg(1), b):
            return _leaves(a, pick_greater) + _leaves(b, pick_greater)
    return [term]


def classify(header: z3.ArithRef, next_value: z3.ArithRef) -> Accumulator | None:
    step = simplify(next_value - header)
    if not mentions(step, header):
        return Accumulator("sum", header, step, next_value)
    for kind, greater in (("max", True), ("min", False)):
        leaves = _leaves(next_value, greater)
        own = [leaf for leaf in leaves if z3.eq(leaf, header)]
        others = [leaf for leaf in leaves if not z3.eq(leaf, header)]
        if len(own) == 1 and others and not any(mentions(leaf, header) for leaf in others):
            combined = others[0]
            for leaf in others[1:]:
                keep = combined >= leaf if greater else combined <= leaf
                combined = z3.If(keep, combined, leaf)
            return Accumulator(kind, header, combined, next_value)
    return None


def at_iteration(acc: Accumulator, start: z3.ArithRef, count: z3.BitVecRef, step_at: z3.ArithRef,
                 k: z3.BitVecRef, bound_var: z3.BitVecRef) -> z3.ArithRef:
    """The register's value after `count` iterations: start ⊕ T(0) ⊕ … ⊕ T(count-1). `step_at` is T with
    the header symbols replaced by their values at iteration k; the comprehension binds `bound_var`."""
    body = z3.substitute(step_at, (k, bound_var))
    if acc.kind == "sum":
        return start + sum_over(0, count, bound_var, body)
    if acc.kind == "max":
        return max_over(start, 0, count, bound_var, body)
    return min_over(start, 0, count, bound_var, body)


__all__ = ["Accumulator", "classify", "at_iteration", "SUM", "MAX_FROM", "MIN_FROM"]
