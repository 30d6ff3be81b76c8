"""Closing a rewritten lane through kernel rules: from the theorem about the comparison the tactics left to the
theorem about the lane's own comparison, its top goal.

The tactics (the division rewrite, the padding cutter, the prefix peel, the matcher, ...) rewrite the two sides
of a lane's comparison ¬(h ∧ kernel ≠ reference) one step at a time. A step that comes with an equation
⊢ h → new = old (made by kernel rules: `divide_by_constant`, `reindex_lanes`, ...) is undone by the kernel's
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
from semantics import checkers
from semantics.comprehension import COMPREHENSIONS
from semantics.proof import Refused, Theorem, rules
from semantics.proof.rules import by_smt, instantiate, substitute_under
from semantics.proof.sums import unroll
from semantics.terms import outside_binders


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


def fixed(hypothesis: z3.BoolRef, var: z3.ExprRef, value: z3.ExprRef, checker: Checker, timeout_s: float,
          name: str, record) -> Theorem | None:
    """⊢ h → value = var by `by_smt`, where h forces var's value (a pinned thread coordinate), the obligation
    recorded; or None."""
    try:
        theorem = by_smt(z3.Implies(hypothesis, value == var), checker, timeout_s, name, "equivalence")
    except Refused as refused:
        record(refused.obligation, refused.outcome)
        return None
    record(*theorem.evidence[0])
    return theorem


def simplified(hypothesis: z3.BoolRef, term: z3.ExprRef) -> Theorem:
    """⊢ h → simplify(term) = term (the kernel's `simplified`, the rewriter the tactic used)."""
    return rules.simplified(term, hypothesis)


def by_arithmetic(claim: z3.BoolRef, checker: Checker, timeout_s: float, name: str) -> Theorem:
    """⊢ claim by `by_smt` of the claim with every comprehension outside binders read as an atom (a fresh real),
    then `instantiate` of each atom back: a claim that holds whatever values the comprehensions have (the
    arithmetic joining equations about them) holds of them. The obligation then names no binder, which cvc5
    reads; `Refused` when it is not proved or the atoms do not give the claim back."""
    return by_atoms(claim, outside_binders(claim, COMPREHENSIONS), checker, timeout_s, name)


def by_atoms(claim: z3.BoolRef, terms: list[z3.ExprRef], checker: Checker, timeout_s: float, name: str,
             prop: str = "equivalence") -> Theorem:
    """`semantics.checkers.by_atoms` (an equivalence step unless `prop` says otherwise)."""
    return checkers.by_atoms(claim, terms, checker, timeout_s, name, prop)


def unrolled_windows(kernel: z3.ExprRef, reference: z3.ExprRef, decls: tuple[z3.FuncDeclRef, ...], taps,
                     hypothesis: z3.BoolRef, checker: Checker, timeout_s: float,
                     record) -> tuple[z3.ExprRef, list[Step]]:
    """The reference with each application of `decls` (not under a binder) whose `taps` is not None unrolled by
    the kernel's `unroll`, outermost first (a 2-D window's inner one comes out of its binder once its outer one
    is unrolled); with the steps that undo it. A refused unroll stops there (its obligation recorded)."""
    steps: list[Step] = []
    while True:
        window = next((w for w in outside_binders(reference, decls) if taps(w) is not None), None)
        if window is None:
            return reference, steps
        lo, hi = window.arg(window.num_args() - 3), window.arg(window.num_args() - 2)   # before the body
        try:
            equation = unroll(window, hi.as_long() - lo.as_long(), checker, timeout_s, under=hypothesis)
        except Refused as refused:
            if refused.obligation is not None:
                record(refused.obligation, refused.outcome)
            return reference, steps
        record(*equation.evidence[0])
        conclusion = equation.conclusion
        terms = (conclusion.arg(1) if z3.is_implies(conclusion) else conclusion).arg(1)
        steps.append(Step(kernel, reference, equation))
        reference = z3.substitute(reference, (window, terms))
