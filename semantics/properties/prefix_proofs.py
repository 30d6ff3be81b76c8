"""The prefix split and peel (`semantics.properties.prefix`) as kernel theorems, so a scan's lanes close through
kernel rules (`compose.close`).

For the kernel's running reduction ck = C(0, K, B) (B the s operands of a group) and the reference's
cr = C(lo, N, h), with m = lo + s·K:

1. `split_range`: cr = C(lo, m, h) ⊕ C(m, N, h)   (lo ≤ m ≤ N)
2. `reindex_lanes`: C(lo, m, h) = ck, by the lanes i < s at φ_i(j) = lo + s·j + i, each lane the reference
   element itself (so its body obligation is trivial and the lanes obligation is the tactic's obligation 2),
   and the preimage (x - lo) / s
3. the tail: `unroll` for the prefix split (C(m, N, h) = h(m) ⊕ … ⊕ h(m + p - 1)), nothing for the peel
   (the rest is C(m', N, h) itself, m' the simplified m)
4. `compose.by_arithmetic` of (1 ∧ 2 ∧ 3) → (h → ck ⊕ rest = cr), and `mp`: pure equational reasoning
   about the comprehensions, read as atoms.

Untrusted: any refused step leaves the lane in its rewritten form.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import Checker
from semantics.comprehension import body_at
from semantics.proof import Refused, Theorem, rules
from semantics.proof.rules import conj, mp, sym
from semantics.proof.sums import reindex_lanes, split_range, unroll
from semantics.properties import compose


def equations(hypothesis: z3.BoolRef, checker: Checker, timeout_s: float, record) -> Callable:
    """`equation` bound to a lane's hypothesis, checker and record, with the lane's own budget per obligation:
    the restatement's lanes obligation is the tactic's obligation 2 itself, a product of a scan's group can
    take the solver as long."""
    def equate(ck, cr, s, tail, combined) -> Theorem | None:
        return equation(ck, cr, s, tail, combined, hypothesis, checker, timeout_s, record)
    return equate


def equation(ck: z3.ExprRef, cr: z3.ExprRef, s: int, tail: int | None, combined: z3.ArithRef,
             hypothesis: z3.BoolRef, checker: Checker, timeout_s: float, record) -> Theorem | None:
    """⊢ hypothesis → combined = cr, where `combined` is ck, or ck ⊕ rest (the tactic's own term: the p tail
    elements when `tail` = p, the rest of the prefix for a peel when `tail` is None); None when a rule
    refuses (each obligation asked is recorded)."""
    lo, end, body = cr.children()
    count = ck.arg(1)
    m = lo + s * count
    j, x = z3.BitVec("prefix_lane!j", 64), z3.BitVec("prefix_lane!x", 64)
    at = [lo + s * j + i for i in range(s)]
    lanes = tuple((j, body_at(body, a), a) for a in at)
    preimage = x - lo if s == 1 else z3.UDiv(x - lo, s)
    try:
        parts = split_range(cr, m, checker, timeout_s, under=hypothesis)
        if tail is None:
            parts = _simplified_bound(parts, cr.decl()(m, end, body), m)
        first = sym(reindex_lanes(cr.decl()(lo, m, body), ck, lanes, ((x, preimage),) * s, checker, timeout_s,
                                  under=hypothesis))
        premises = [parts, first] + ([unroll(cr.decl()(m, end, body), tail, checker, timeout_s, under=hypothesis)]
                                     if tail is not None else [])
        claim = z3.Implies(hypothesis, combined == cr)
        joined = conj(*premises)
        step = compose.by_arithmetic(z3.Implies(joined.conclusion, claim), checker, timeout_s,
                                     "equivalence: a running reduction's pieces make the reference's prefix")
        theorem = mp(step, joined)
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in theorem.evidence:
        record(ob, outcome)
    return theorem


def _simplified_bound(parts: Theorem, rest: z3.ExprRef, m: z3.BitVecRef) -> Theorem:
    """`parts` with the rest C(m, N, h) written C(simplify(m), N, h), as the peel wrote it (Leibniz on the
    kernel's ⊢ m = simplify(m))."""
    bound = rules.sym(rules.simplified(m))
    if bound.conclusion.arg(0).eq(bound.conclusion.arg(1)):
        return parts
    hole = z3.BitVec("prefix_lane!bound", 64)
    template = z3.substitute(parts.conclusion, (rest, rest.decl()(hole, *rest.children()[1:])))
    return rules.substitute(bound, parts, hole, template)
