"""Masked tails of sums: the zeros a ragged last block adds are dropped before reductions are matched.

Triton loops over column blocks and loads with `mask=cols < n, other=0`, so each lane's accumulator is
`Sum(lo, hi, λj. If(c(j), 0, e(j)))` where the padded iterations (c true) form a tail of the range. Such a
sum equals `Sum(lo, cut, λj. e(j))` when, for every j in [lo, hi), c(j) holds exactly when j ≥ cut, and
lo ≤ cut ≤ hi: the dropped terms are all zero and the kept ones unchanged (finite sums of reals).
`If(c, e, 0)` is the same with ¬c. The cut is guessed from one model of the hypothesis (a binary search on
the mask's value there, c being monotone in j when the premise holds) and every premise is an obligation
under the hypothesis; a sum whose premises are not proved is left as it is. A constant bound (fixed shapes
and a fixed storing thread) is what makes the guess possible; otherwise nothing changes.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.comprehension import SUM, body_at, sum_over
from semantics.proof import Refused, Theorem
from semantics.proof.sums import sum_apart
from semantics.terms import outside_binders

BATCH = 64   # premises of this many sums go to the solver as one obligation
EQUATION_S = 10.0   # each side condition of a cut's kernel equation (the cut is proved already: this is extra)


def _padded(term: z3.ExprRef) -> tuple[z3.BoolRef, z3.ArithRef] | None:
    """(padding condition, kept element) of a Sum whose body is If(c, 0, e) or If(c, e, 0), over Var(0)."""
    body = term.arg(2).body()
    if not z3.is_app_of(body, z3.Z3_OP_ITE):
        return None
    cond, then, other = body.children()
    zero = [z3.is_rational_value(v) and v.as_fraction() == 0 for v in (then, other)]
    if zero[0] and not zero[1]:
        return cond, other
    if zero[1] and not zero[0]:
        return z3.Not(cond), then
    return None


def _cut(model: z3.ModelRef, lo: int, hi: int, pad) -> int | None:
    """The first j in [lo, hi) where the mask pads in the model (hi if none), assuming a padded tail."""
    def padded(j: int) -> bool | None:
        value = model.eval(pad(j), model_completion=True)
        return z3.is_true(value) if z3.is_bool(value) and (z3.is_true(value) or z3.is_false(value)) else None
    low, high = lo, hi
    while low < high:
        mid = (low + high) // 2
        answer = padded(mid)
        if answer is None:
            return None
        low, high = (low, mid) if answer else (mid + 1, high)
    return low


Cut = tuple[z3.ExprRef, z3.ExprRef, Theorem | None]   # (a Sum, its kept head, ⊢ h → Sum = head or None)


def rewrite(term: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker, timeout_s: float,
            record) -> tuple[z3.ExprRef, list[Cut]]:
    """`term` with every Sum whose padded iterations are proved to be a tail cut down to its kept range, and each
    cut with its kernel equation (`sums.sum_apart`; None where a side condition of the rule was not proved)."""
    sums = [t for t in outside_binders(term, (SUM,)) if _padded(t) is not None]
    if not sums:
        return term, []
    solver = z3.Solver()
    solver.set("timeout", 5000)
    solver.add(hypothesis)
    if solver.check() != z3.sat:
        return term, []
    model = solver.model()
    candidates = []
    for n, s in enumerate(sums):
        cond, kept = _padded(s)
        bounds = [model.eval(b, model_completion=True) for b in s.children()[:2]]
        if not all(z3.is_bv_value(b) for b in bounds):
            continue
        lo, hi = (b.as_long() for b in bounds)
        cut = _cut(model, lo, hi, lambda j, cond=cond: z3.substitute_vars(cond, z3.BitVecVal(j, 64)))
        if cut is None:
            continue
        j = z3.BitVec(f"pad!{n}", 64)
        pad, lo_t, hi_t = z3.substitute_vars(cond, j), s.arg(0), s.arg(1)
        wrong = z3.Or(lo_t != lo, hi_t != hi,
                      z3.And(z3.ULE(lo_t, j), z3.ULT(j, hi_t), pad != z3.UGE(j, z3.BitVecVal(cut, 64))))
        candidates.append((s, sum_over(lo, cut, j, z3.substitute_vars(kept, j)), wrong))
    replaced = []
    for start in range(0, len(candidates), BATCH):
        batch = candidates[start:start + BATCH]
        ob = Obligation(f"equivalence: the masked tails of {len(batch)} sums are their zero padding",
                        "equivalence", z3.And(hypothesis, z3.Or([w for _, _, w in batch])))
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        if outcome.status == PROVED:
            replaced += [(s, cut_sum, _equation(s, cut_sum, hypothesis, checker, timeout_s, record))
                         for s, cut_sum, _ in batch]
    return (z3.substitute(term, *[(s, c) for s, c, _ in replaced]) if replaced else term), replaced


def _equation(whole: z3.ExprRef, head: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker, timeout_s: float,
              record) -> Theorem | None:
    """⊢ h → whole = head by the kernel's `sum_apart` with one lane, the whole body (its side conditions
    recorded), or None."""
    v = z3.BitVec("pad!lane", 64)
    try:
        theorem = sum_apart(whole, ((v, body_at(whole.arg(2), v), head),), checker, min(timeout_s, EQUATION_S),
                            under=hypothesis)
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in theorem.evidence:
        record(ob, outcome)
    return theorem
