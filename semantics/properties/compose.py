"""Closing a rewritten lane through kernel rules: from the theorem about the comparison the tactics left to the
theorem about the lane's own comparison, its top goal.

The tactics (the division rewrite, the padding cutter, the prefix peel, the matcher, ...) rewrite the two sides
of a lane's comparison ¬(h ∧ kernel ≠ reference) one step at a time. A step that comes with an equation
⊢ h → new = old (made by kernel rules: `divide_by_constant`, `reindex_sum`, ...) is undone by the kernel's
`substitute_under`: from ¬(h ∧ P(new)) it concludes ¬(h ∧ P(old)), checking that the sides before the step,
with old put back to new, are exactly the sides after it. A step that named a comprehension by a fresh symbol
s (proved equal on both sides) is undone by `instantiate` (s := the kernel's comprehension, the claim holding
for every s) before its equation. Untrusted: a wrong step is refused by the rules, and the lane then stays
in its rewritten form (`semantics.verdict.standings`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import z3

from lean_pool.checker import Checker
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt, instantiate, substitute_under

SIMPLIFY_TIMEOUT_S = 10.0   # an equation the solver proves for a simplification the tactic made


@dataclass(frozen=True)
class Step:
    """One rewrite of a lane's comparison: both sides before it, and the kernel theorem ⊢ h → new = old that
    undoes it (None: the tactic proved it by obligations of its own, so the lane cannot be closed), with the
    shared symbol s it introduced and the kernel term s stands for (instantiated first)."""

    kernel: z3.ExprRef
    reference: z3.ExprRef
    equation: Theorem | None
    symbol: tuple[z3.ExprRef, z3.ExprRef] | None = None


def comparison(hypothesis: z3.BoolRef, kernel: z3.ExprRef, reference: z3.ExprRef) -> z3.BoolRef:
    """¬(h ∧ kernel ≠ reference): the form of a lane's claim and of its goal (`equivalence.goal`)."""
    return z3.Not(z3.And(hypothesis, kernel != reference))


def close(theorem: Theorem, hypothesis: z3.BoolRef, steps: Iterable[Step]) -> Theorem | None:
    """The theorem about the sides before the first step, from `theorem` about the sides after the last, undoing
    the steps last first; None when a step has no equation or a rule refuses it."""
    for step in reversed(list(steps)):
        if step.equation is None:
            return None
        try:
            if step.symbol is not None:
                theorem = instantiate(theorem, *step.symbol)
            theorem = substitute_under(step.equation, theorem, comparison(hypothesis, step.kernel, step.reference))
        except Refused:
            return None
    return theorem


def opaque(kernel: z3.ExprRef, reference: z3.ExprRef, new: tuple[z3.ExprRef, z3.ExprRef]) -> list[Step]:
    """A rewrite without a kernel theorem, from (kernel, reference) to `new`: one step that cannot be undone,
    none when the rewrite changed nothing."""
    return [] if kernel.eq(new[0]) and reference.eq(new[1]) else [Step(kernel, reference, None)]


def _equation(hypothesis: z3.BoolRef, new: z3.ExprRef, old: z3.ExprRef, checker: Checker, timeout_s: float,
              name: str, record) -> Theorem | None:
    """⊢ hypothesis → new = old by `by_smt` (the obligation recorded), or None."""
    try:
        theorem = by_smt(z3.Implies(hypothesis, new == old), checker, timeout_s, name, "equivalence")
    except Refused as refused:
        record(refused.obligation, refused.outcome)
        return None
    record(*theorem.evidence[0])
    return theorem


def fixed(hypothesis: z3.BoolRef, var: z3.ExprRef, value: z3.ExprRef, checker: Checker, timeout_s: float,
          name: str, record) -> Theorem | None:
    """⊢ h → value = var, where h forces var's value (a pinned thread coordinate), or None."""
    return _equation(hypothesis, value, var, checker, timeout_s, name, record)


def simplified(hypothesis: z3.BoolRef, term: z3.ExprRef, simple: z3.ExprRef, checker: Checker, timeout_s: float,
               record) -> Theorem | None:
    """⊢ h → simple = term for z3's simplification of `term` (an equivalence the simplifier promises and the
    solver proves: the simplifier is not trusted), or None."""
    return _equation(hypothesis, simple, term, checker, min(timeout_s, SIMPLIFY_TIMEOUT_S),
                     "equivalence: a simplified kernel value equals the value", record)
