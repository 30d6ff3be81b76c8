"""Division by constants in index terms, taken apart where the solver would otherwise bit-blast a divider.

A reference reads its inputs at indices like `e / 300` and `e % 300` of the output index e, while the
kernel computed e as `300·c + r`. Proving `(300·c + r) / 300 = c` inside a larger query costs the solver
a 64-bit divider circuit; here it is one small obligation instead. A hint splits the dividend as
`K·A + B`; if `K·A + B` equals it without wrap-around (checked at 128 bits) and `B < K`, then the quotient
is A and the remainder B (the kernel's rule `semantics.proof.indices.divide_by_constant`), and the division is
replaced by them. A rejected hint changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import Checker
from semantics.proof import Refused, Theorem
from semantics.proof.indices import defines, divide_by_constant
from semantics.proof.rules import by_smt
from semantics.terms import subterms

DIVISIONS = (z3.Z3_OP_BUDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BUREM_I)


def by_constant(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The divisions and remainders of `term` by a positive constant."""
    return [t for t in subterms(term) if z3.is_app(t) and t.decl().kind() in DIVISIONS
            and z3.is_bv_value(t.arg(1)) and t.arg(1).as_long() > 0]


def is_quotient(division: z3.ExprRef) -> bool:
    return z3.is_app_of(division, z3.Z3_OP_BUDIV) or z3.is_app_of(division, z3.Z3_OP_BUDIV_I)


def rewrite(term: z3.ExprRef, hypothesis: z3.BoolRef, split: Callable, checker: Checker, timeout_s: float,
            record, accepted: dict, key: str) -> tuple[z3.ExprRef, list[tuple[z3.ExprRef, Theorem]]]:
    """`term` with every division by a constant that a proved split explains replaced by its parts, and the
    rewrites one by one: (the term before it, ⊢ hypothesis → part = division), made by the kernel's
    `divide_by_constant` from the split's theorem."""
    done: dict[tuple[int, int], tuple[z3.BitVecRef, z3.BitVecRef, Theorem] | None] = {}
    steps = []
    for division in by_constant(term):
        dividend, divisor = division.arg(0), division.arg(1).as_long()
        cache_key = (dividend.get_id(), divisor)
        if cache_key not in done:
            name = f"{key}:div{len(done)}"
            parts = split(name, dividend, divisor)
            proof = None if parts is None else _proved(dividend, divisor, parts, hypothesis, checker, timeout_s,
                                                      record)
            done[cache_key] = None if proof is None else (*parts, proof)
            if proof is not None:
                accepted[name] = parts
        if done[cache_key] is None:
            continue
        quotient, remainder, proof = done[cache_key]
        try:
            equation = divide_by_constant(division, quotient, remainder, proof)
        except Refused:
            continue
        steps.append((term, equation))
        term = z3.substitute(term, (division, quotient if is_quotient(division) else remainder))
    return term, steps


def _proved(dividend, divisor: int, parts, hypothesis, checker: Checker, timeout_s: float,
            record) -> Theorem | None:
    """⊢ hypothesis → defines(dividend, divisor, *parts), or None."""
    claim = z3.Implies(hypothesis, defines(dividend, divisor, *parts))
    try:
        theorem = by_smt(claim, checker, timeout_s,
                         f"equivalence: an index divided by {divisor} splits as quotient and remainder", "equivalence")
    except Refused as refused:
        record(refused.obligation, refused.outcome)
        return None
    record(*theorem.evidence[0])
    return theorem
