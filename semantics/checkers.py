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
from semantics.comprehension import COMPREHENSIONS
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt, instantiate
from semantics.ptx.neginf import mentions_neg_inf
from semantics.terms import outside_binders


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
    """Decides an obligation F by `by_smt(¬F)` with the inner checker; each theorem proved joins `theorems`.

    Where F holds comprehensions outside binders, ¬F is first proved with each read as an atom (a fresh symbol
    of its sort: `by_smt` of ¬F[atoms], then `instantiate` of each atom by its comprehension, which gives ¬F
    back exactly): what holds whatever values they have holds of them. Such an obligation names no lambda, which
    cvc5 cannot read, so `lark check --solver both` re-proves it (a warp's lanes storing one value hold the
    same Sums in a butterfly's order). When that is not proved, F is asked as it stands."""

    ATOMS_S = 5.0    # the atoms' query, before F as it stands

    def __init__(self, inner: Checker, theorems: list[Theorem]):
        self.inner, self.theorems = inner, theorems
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        claim = z3.Not(obligation.formula)
        try:
            theorem = over_atoms(claim, self.inner, min(timeout_s, self.ATOMS_S), obligation.name, obligation.prop) \
                or by_smt(claim, self.inner, timeout_s, obligation.name, obligation.prop, witness=obligation.witness)
        except Refused as refused:
            return refused.outcome
        self.theorems.append(theorem)
        return theorem.evidence[0][1]


def over_atoms(claim: z3.BoolRef, checker: Checker, timeout_s: float, name: str, prop: str) -> Theorem | None:
    """⊢ claim by `by_atoms` with every comprehension outside binders as an atom, or None where the claim has none
    or is not proved so (the caller then asks it as it stands)."""
    terms = outside_binders(claim, COMPREHENSIONS)
    if not terms:
        return None
    try:
        return by_atoms(claim, terms, checker, timeout_s, name, prop)
    except Refused:
        return None


def by_atoms(claim: z3.BoolRef, terms: list[z3.ExprRef], checker: Checker, timeout_s: float, name: str,
             prop: str) -> Theorem:
    """⊢ claim by `by_smt` of the claim with each of `terms` read as a fresh symbol of its sort, then
    `instantiate` of each symbol back: what holds whatever values those terms have holds of them. `Refused`
    when it is not proved or the symbols do not give the claim back. (Kernel rules only: a derived rule.)"""
    # the sort in the name: a certificate's one term table may hold atom 0 of one proof as a real and of
    # another as a bit-vector or a truth value
    atoms = [(t, z3.Const(f"atom!{n}!{''.join(c for c in t.sort().sexpr() if c.isalnum())}", t.sort()))
             for n, t in enumerate(terms)]
    theorem = by_smt(z3.substitute(claim, *atoms) if atoms else claim, checker, timeout_s, name, prop)
    for term, atom in atoms:
        theorem = instantiate(theorem, atom, term)
    if not theorem.conclusion.eq(claim):
        raise Refused(f"by_atoms: the atoms of {name} do not give the claim back")
    return theorem


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
