"""Checkers the core wraps around the one it is given: obligations with the -inf marker refused, the launch's
sizes named in models, obligations decided through the kernel, and obligations answered from proved theorems.

`Through` and `Known` are the two sides of one contract between `lark verify` and `lark check`. The trusted code
that derives a task's meaning and asks side conditions directly (exact loop exits and bounds, shared-memory
writers, supersession, defined registers, warp convergence, loop barriers) is handed a checker and reacts only
to `proved` or not. In `verify` that checker is `Through`: each obligation goes through the kernel
(`rules.by_smt` of its negation), and the theorem is kept, to be certified. In `check` it is `Known`: an
obligation counts as proved exactly when a theorem replayed from the certificate states its negation, without
hypotheses. The same code, given the same hints, then asks the same obligations and gets the same answers, and
no answer comes from anywhere but a kernel theorem.
"""

from __future__ import annotations

from dataclasses import replace

import z3

from lean_pool.canonical import StructuralDigests
from lean_pool.checker import PROVED, UNKNOWN, Checker, Obligation, Outcome
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt
from semantics.ptx.neginf import mentions_neg_inf


class FiniteOnly:
    """A checker that never hands a solver an obligation holding the -inf padding marker: the marker is not a
    real, so a proof or a model that treats it as one means nothing (`semantics.ptx.neginf` keeps it in
    registers; this is the wall behind that)."""

    def __init__(self, inner: Checker):
        self.inner = inner
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        if mentions_neg_inf(obligation.formula):
            return Outcome(UNKNOWN, self.name, 0.0, reason="-inf (a masked lane's padding) is not a real")
        return self.inner.check(obligation, timeout_s)


class WithSizes:
    """A checker that asks every model for the values of the launch's symbolic scalars too, so a refutation of
    a task proved for a range of sizes names the size that exposes it (`scalar.n` in the witness)."""

    def __init__(self, inner, scalars: tuple):
        self.inner = inner
        self.name = inner.name
        self.terms = {str(s.symbol): s.symbol for s in scalars}

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        asked = replace(obligation, witness={**obligation.witness, **self.terms})
        return self.inner.check(asked, timeout_s)


class Through:
    """Decides an obligation F by `by_smt(¬F)` with the inner checker; each theorem proved joins `theorems`."""

    def __init__(self, inner: Checker, theorems: list[Theorem]):
        self.inner, self.theorems = inner, theorems
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        try:
            theorem = by_smt(z3.Not(obligation.formula), self.inner, timeout_s, obligation.name, obligation.prop,
                             witness=obligation.witness)
        except Refused as refused:
            return refused.outcome
        self.theorems.append(theorem)
        return theorem.evidence[0][1]


class Known:
    """Answers `proved` for an obligation F exactly when ¬F is, up to the order of the arguments of commutative
    operators, the conclusion of one of `theorems` without hypotheses, and `unknown` otherwise; it solves
    nothing. (The semantics derives the same statements in `lark check` as in `lark verify`, but z3's simplifier
    orders commutative arguments by the order the process made its terms in: `structural_digest` reads both
    the same. Formulas equal up to that order and to the names of bound variables are equivalent.)"""

    name = "kernel"

    def __init__(self, theorems: list[Theorem]):
        self.digests = StructuralDigests()   # shared subterms digested once (goals share their values)
        self.stated = {self.key(t.conclusion): t for t in theorems if not t.hypotheses}

    def key(self, statement: z3.BoolRef) -> str:
        """The statement's structural digest (what `stated` is keyed by)."""
        return self.digests.digest(statement)

    def theorem(self, statement: z3.BoolRef) -> Theorem | None:
        return self.stated.get(self.key(statement))

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        if self.theorem(z3.Not(obligation.formula)) is not None:
            return Outcome(PROVED, self.name, 0.0)
        return Outcome(UNKNOWN, self.name, 0.0, reason="no certified theorem states it")
