"""Division by constants in index terms, taken apart where the solver would otherwise bit-blast a divider.

A reference reads its inputs at indices like `e / 300` and `e % 300` of the output index e, while the
kernel computed e as `300·c + r`. Proving `(300·c + r) / 300 = c` inside a larger query costs the solver
a 64-bit divider circuit; here it is one small obligation instead. A hint splits the dividend as
`K·A + B`; if `K·A + B` equals it without wrap-around (checked at 128 bits) and `B < K`, then the quotient
is A and the remainder B (the kernel's rule `semantics.proof.indices.divide_by_constant`), and the division is
replaced by them. A rejected hint changes nothing.

Where the prover's split fails (a dividend that is no multiple-plus-rest of affine terms: the reference's
`e / C` of an output index e the kernel took apart itself with `idx / C` in 32 bits), the kernel's own
quotients by the same divisor are tried as A, with B = dividend - K·A: both sides then read the one
division atom, and the comparison no longer needs a divider circuit for each.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import Checker
from semantics.proof import Refused, Theorem
from semantics.proof.indices import defines, divide_by_constant
from semantics.proof.rules import by_smt
from semantics.purify import by_constant, is_quotient
from semantics.terms import subterms, under_binder


def rewrite(term: z3.ExprRef, hypothesis: z3.BoolRef, split: Callable, checker: Checker, timeout_s: float,
            record, accepted: dict, key: str,
            kernel: z3.ExprRef | None = None) -> tuple[z3.ExprRef, list[tuple[z3.ExprRef, Theorem]]]:
    """`term` with every division by a constant that a proved split explains replaced by its parts (the
    prover's split first, then one through each of `kernel`'s own quotients by that divisor), and the
    rewrites one by one: (the term before it, ⊢ hypothesis → part = division), made by the kernel's
    `divide_by_constant` from the split's theorem. A division the kernel itself computes of an equal dividend
    (the same row index written at another width) is first replaced by the kernel's (`_same_division`)."""
    done: dict[tuple[int, int], tuple[z3.BitVecRef, z3.BitVecRef, Theorem] | None] = {}
    steps = []
    for division in by_constant(term):
        dividend, divisor = division.arg(0), division.arg(1).as_long()
        same = _same_division(division, kernel, hypothesis, checker, timeout_s, record)
        if same is not None:
            steps.append((term, same[1]))
            term = z3.substitute(term, (division, same[0]))
            continue
        cache_key = (dividend.get_id(), divisor)
        if cache_key not in done and under_binder(dividend):
            done[cache_key] = None   # under a binder: no closed claim states its split (z3 refuses it unread)
        if cache_key not in done:
            name = f"{key}:div{len(done)}"
            done[cache_key] = None
            for parts in [split(name, dividend, divisor), *through_quotients(kernel, dividend, divisor)]:
                proof = None if parts is None else _proved(dividend, divisor, parts, hypothesis, checker,
                                                          timeout_s, record)
                if proof is not None:
                    done[cache_key] = (*parts, proof)
                    accepted[name] = parts
                    break
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


SPLIT_S = 10.0  # a split proposal is a guess: one the solver does not settle soon is dropped, not waited for
SAME_S = 10.0   # at most this long for ⊢ h → (a / d = b / d): z3 sees a = b and never builds the divider


def _same_division(division: z3.ExprRef, kernel: z3.ExprRef | None, hypothesis: z3.BoolRef, checker: Checker,
                   timeout_s: float, record) -> tuple[z3.BitVecRef, Theorem] | None:
    """(k, ⊢ h → k = division) for the first unsigned division k of `kernel` (zero-extended to the width) by the
    same divisor, of the same kind (quotient or remainder), that the hypothesis makes equal to `division`: the
    reference's e / W of an output row the kernel took apart as idx / W, with e and idx the same index written
    at different widths. Proved by `by_smt`, which never builds the divider (z3 identifies the dividends first);
    the equation is the step itself, so no Euclidean split is asked (at 64 bits z3 often cannot prove one)."""
    if kernel is None or under_binder(division):   # a binder's body: no closed claim
        return None
    d, width = division.arg(1).as_long(), division.size()
    for t in by_constant(kernel):
        if t.arg(1).as_long() != d or is_quotient(t) != is_quotient(division) or t.size() > width or \
                t.eq(division) or under_binder(t):
            continue
        candidate = z3.ZeroExt(width - t.size(), t) if t.size() < width else t
        try:
            theorem = by_smt(z3.Implies(hypothesis, candidate == division), checker, min(timeout_s, SAME_S),
                             f"equivalence: an index divided by {d} is the kernel's own", "equivalence")
        except Refused as refused:
            record(refused.obligation, refused.outcome)
            continue
        record(*theorem.evidence[0])
        return candidate, theorem
    return None


QUOTIENTS = {z3.Z3_OP_BUDIV: z3.ZeroExt, z3.Z3_OP_BUDIV_I: z3.ZeroExt, z3.Z3_OP_BSDIV: z3.SignExt,
             z3.Z3_OP_BSDIV_I: z3.SignExt}   # how a narrower quotient widens to the dividend's width


def through_quotients(kernel: z3.ExprRef | None, dividend: z3.BitVecRef,
                      divisor: int) -> list[tuple[z3.BitVecRef, z3.BitVecRef]]:
    """(A, dividend - divisor·A) for each quotient A of `kernel` by `divisor` (widened to the dividend's
    width, as its signedness says), and A = q / (divisor / d) for each quotient q of `kernel` by a proper
    divisor d of `divisor` (⌊⌊e/d⌋/m⌋ = ⌊e/(d·m)⌋: the reference's batch index e / (C·L) of an output row the
    kernel took apart as e / L): guesses the caller proves with `defines`, free of bound variables."""
    if kernel is None:
        return []
    found = []
    for t in subterms(kernel):
        if z3.is_app(t) and t.decl().kind() in QUOTIENTS and z3.is_bv_value(t.arg(1)) and \
                t.arg(1).as_long() > 0 and divisor % t.arg(1).as_long() == 0 and t.size() <= dividend.size() and \
                not under_binder(t):
            grow = dividend.size() - t.size()
            quotient = QUOTIENTS[t.decl().kind()](grow, t) if grow else t
            rest = divisor // t.arg(1).as_long()
            if rest > 1:
                quotient = z3.UDiv(quotient, z3.BitVecVal(rest, dividend.size()))
            if not any(quotient.eq(q) for q, _ in found):
                found.append((quotient, dividend - quotient * divisor))
    return found


def _proved(dividend, divisor: int, parts, hypothesis, checker: Checker, timeout_s: float,
            record) -> Theorem | None:
    """⊢ hypothesis → defines(dividend, divisor, *parts), or None."""
    claim = z3.Implies(hypothesis, defines(dividend, divisor, *parts))
    try:
        theorem = by_smt(claim, checker, min(timeout_s, SPLIT_S),
                         f"equivalence: an index divided by {divisor} splits as quotient and remainder", "equivalence",
                         purify=True)
    except Refused as refused:
        record(refused.obligation, refused.outcome)
        return None
    record(*theorem.evidence[0])
    return theorem
