"""Masked tails of sums: the zeros a ragged last block adds are dropped before reductions are matched.

Triton loops over column blocks and loads with `mask=cols < n, other=0`, so each lane's accumulator is
`Sum(lo, hi, λj. If(c(j), 0, e(j)))` where the padded iterations (c true) form a tail of the range. Such a
sum equals `Sum(lo, cut, λj. e(j))` when, for every j in [lo, hi), c(j) holds exactly when j ≥ cut, and
lo ≤ cut ≤ hi: the dropped terms are all zero and the kept ones unchanged (finite sums of reals).
`If(c, e, 0)` is the same with ¬c. The cut is guessed from one model of the hypothesis (a binary search on
the mask's value there, c being monotone in j when the premise holds); the kernel's `sums_apart` checks the
cuts under the hypothesis, a batch of sums at a time, and a batch it refuses is left as it is. A constant
bound (fixed shapes and a fixed storing thread) is what makes the guess possible; otherwise nothing changes.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import SUM, body_at, sum_over
from semantics.proof import Refused, Theorem
from semantics.proof.sums import sums_apart
from semantics.terms import outside_binders

BATCH = 64   # this many sums are cut by one rule application (its side conditions one obligation each)
LANE = z3.BitVec("pad!lane", 64)


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


Cut = tuple[dict, Theorem]   # (each cut Sum to its kept head, ⊢ h → ∧ Sum = head by `sums_apart`)


def rewrite(term: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker, timeout_s: float,
            record) -> tuple[z3.ExprRef, list[Cut]]:
    """`term` with every Sum whose padded iterations are proved to be a tail cut down to its kept range, and the
    cuts in batches, each with its kernel equation (`sums.sums_apart`: four obligations per batch of sums, so a
    block of a thousand lanes costs a few dozen). A batch whose rule refuses is left as it is."""
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
    for s in sums:
        cond, kept = _padded(s)
        bounds = [model.eval(b, model_completion=True) for b in s.children()[:2]]
        if not all(z3.is_bv_value(b) for b in bounds):
            continue
        lo, hi = (b.as_long() for b in bounds)
        cut = _cut(model, lo, hi, lambda j, cond=cond: z3.substitute_vars(cond, z3.BitVecVal(j, 64)))
        if cut is not None:
            candidates.append((s, sum_over(lo, cut, LANE, z3.substitute_vars(kept, LANE))))
    cuts = []
    for start in range(0, len(candidates), BATCH):
        batch = candidates[start:start + BATCH]
        theorem = _equation(batch, hypothesis, checker, timeout_s, record)
        if theorem is not None:
            cuts.append((dict(batch), theorem))
    replaced = [pair for heads, _ in cuts for pair in heads.items()]
    return (z3.substitute(term, *replaced) if replaced else term), cuts


def _equation(batch: list[tuple[z3.ExprRef, z3.ExprRef]], hypothesis: z3.BoolRef, checker: Checker,
              timeout_s: float, record) -> Theorem | None:
    """⊢ h → ∧ whole = head by the kernel's `sums_apart`, each Sum one lane, its whole body (the side conditions
    recorded), or None."""
    try:
        theorem = sums_apart(tuple((whole, ((LANE, body_at(whole.arg(2), LANE), head),)) for whole, head in batch),
                             checker, timeout_s, under=hypothesis)
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in theorem.evidence:
        record(ob, outcome)
    return theorem
