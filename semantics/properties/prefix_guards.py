"""Guarded prefixes: a reference element `If(g, ε, C(lo, N, h))` whose guarded branch is an empty prefix.

An exclusive scan's reference is a concatenation (torch's `cat((zeros, cumsum(x[:, :-1])))`): its element is
`If(c < 1, 0, Sum(0, c - 1 + 1, h))`, where the guard picks the zero column exactly when the prefix is empty
(c = 0, so the Sum has no element either). A kernel's running sum has no such case split: it stores
`Sum(0, K, B)`, which is 0 at K = 0 by itself. Left as it is, the prefix splitter (`semantics.properties.
prefix`) names the kernel's Sum and the reference's by one fresh symbol, and the guarded branch then
compares that free symbol with 0: satisfiable, a counterexample that does not replay (the symbol stands for
an empty Sum). This rewriter removes the case split first, where it is redundant:

Theorem (empty guard). For a Sum (Prod) C = C(lo, N, h) with neutral element ε (0, or 1 for a Prod), and a
hypothesis H under which g forces the range to be empty (H ∧ g → N = lo, on exact integers),
    H → C = If(g, ε, C)
(and H → C = If(g', C, ε) for g' = ¬g the other way round). Proof: under H, if g the range is empty and
C = ε, both sides are ε; otherwise the If is its C branch.

Through kernel rules: `unroll` of C with count 0 under H ∧ g (its side condition is the premise, N = lo
zero-extended), then `compose.by_arithmetic` of (H ∧ g → C = ε) → (H → C = If(g, ε, C)) with C an atom, and
`mp`. The equation is the rewrite's step, so `compose.close` undoes it. Untrusted: a refused rule leaves the
If in place. Nothing enumerates: one unroll of zero elements per guarded prefix.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import PROD, SUM
from semantics.proof import Refused, Theorem
from semantics.proof.rules import mp
from semantics.proof.sums import unroll
from semantics.properties import compose
from semantics.terms import outside_binders

NEUTRAL = {SUM.name(): 0, PROD.name(): 1}
GUARD_S = 5.0   # per obligation: a guard that forces an empty range does so by bounds arithmetic, quickly; any
                # If(g, 0, Sum) of a reference is tried (a padded window's too), and a slow refusal costs every lane
_IF = z3.If(z3.Bool("prefix_guards!g"), z3.Real("prefix_guards!a"), z3.Real("prefix_guards!b")).decl()


def _is_neutral(term: z3.ExprRef, comprehension: z3.ExprRef) -> bool:
    return z3.is_rational_value(term) and term.as_fraction() == NEUTRAL[comprehension.decl().name()]


def _is_prefix(term: z3.ExprRef) -> bool:
    """A Sum or Prod whose range moves (a fixed range, a triangular mask's row of a matmul, is never empty)."""
    return z3.is_app(term) and any(term.decl().eq(d) for d in (SUM, PROD)) and \
        not all(z3.is_bv_value(z3.simplify(bound)) for bound in term.children()[:2])


def guarded(term: z3.ExprRef) -> tuple[z3.BoolRef, z3.ExprRef] | None:
    """(the condition under which the If is ε, the comprehension C) for If(g, ε, C) or If(g, C, ε); None
    for any other term."""
    if not (z3.is_app(term) and term.decl().eq(_IF)):
        return None
    g, a, b = term.children()
    if _is_prefix(b) and _is_neutral(a, b):
        return g, b
    if _is_prefix(a) and _is_neutral(b, a):
        return z3.Not(g), a
    return None


def equation(term: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker, timeout_s: float) -> Theorem:
    """⊢ hypothesis → C = term for a guarded prefix `term` (`guarded`), or `Refused` (the obligation it
    refused carried)."""
    found = guarded(term)
    if found is None:
        raise Refused(f"prefix_guards: {term} is not a guarded prefix")
    condition, prefix = found
    empty = unroll(prefix, 0, checker, timeout_s, under=z3.And(hypothesis, condition))
    claim = z3.Implies(hypothesis, prefix == term)
    step = compose.by_arithmetic(z3.Implies(empty.conclusion, claim), checker, timeout_s,
                                 "equivalence: a guard that holds only where the prefix is empty")
    return mp(step, empty)


class GuardRemover:
    """Rewrites the reference's guarded prefixes (outside binders) to their comprehension, each with its
    equation as a step (`compose.Step`); the kernel side is left as it is."""

    def __init__(self, hypothesis: z3.BoolRef, checker: Checker, timeout_s: float, record):
        self.hypothesis = hypothesis
        self.checker = checker
        self.timeout_s = timeout_s
        self.record = record
        self.steps: list[compose.Step] = []

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        for term in outside_binders(reference, (_IF,)):
            if guarded(term) is None:
                continue
            try:
                theorem = equation(term, self.hypothesis, self.checker, min(self.timeout_s, GUARD_S))
            except Refused as refused:
                if refused.obligation is not None:
                    self.record(refused.obligation, refused.outcome)
                continue
            for ob, outcome in theorem.evidence:
                self.record(ob, outcome)
            rewritten = z3.substitute(reference, (term, guarded(term)[1]))
            if not rewritten.eq(reference):   # an If inside one removed before is gone with it
                self.steps.append(compose.Step(kernel, reference, theorem))
                reference = rewritten
        return kernel, reference
