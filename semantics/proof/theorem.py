"""The `Theorem` type and the one door through which the kernel's rules make one.

A theorem is a sequent `hypotheses ⊢ conclusion` resting on `axioms`: for every value of its free symbols
(uninterpreted constants and functions: thread ids, input tensors, the uninterpreted `Sum`), if every axiom
instance and every hypothesis holds, the conclusion holds. All three are closed z3 formulas; free symbols
are implicitly universally quantified. A theorem with hypotheses is conditional: `assume` is the only rule
that adds one, so a hypothesis names exactly what a proof has not yet discharged.

Only `semantics.proof` mints theorems: `Theorem(...)` outside `_mint` raises `Forged` (also through
`dataclasses.replace`, which calls `__init__`). Python has no real privacy — `object.__new__` and
`object.__setattr__` can still build one — so this wall stops mistakes and careless tactics, and the
import contract (`pyproject.toml`, tests/test_trusted_base.py) stops the kernel from depending on them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from dataclasses import dataclass

import z3

from lean_pool.checker import Obligation, Outcome

_MINTING: contextvars.ContextVar[bool] = contextvars.ContextVar("minting", default=False)


class Forged(TypeError):
    """A `Theorem` was constructed outside the kernel's rules."""


class Refused(ValueError):
    """A rule's inputs do not match its theorem, or a side condition was not proved. `outcome` and
    `obligation` are set when a solver was asked (the outcome may hold a counterexample)."""

    def __init__(self, message: str, obligation: Obligation | None = None, outcome: Outcome | None = None):
        super().__init__(message)
        self.obligation = obligation
        self.outcome = outcome


@dataclass(frozen=True, eq=False)
class Theorem:
    """`hypotheses ⊢ conclusion` under `axioms`. `rule` names the rule that made it; `evidence` holds every
    obligation (with the outcome that proved it) discharged on the way, for the certificate."""

    conclusion: z3.BoolRef
    hypotheses: tuple[z3.BoolRef, ...] = ()
    axioms: tuple[z3.BoolRef, ...] = ()
    rule: str = ""
    evidence: tuple[tuple[Obligation, Outcome], ...] = ()

    def __post_init__(self) -> None:
        if not _MINTING.get():
            raise Forged("a Theorem can only be made by a rule of semantics.proof")

    def states(self, goal: z3.BoolRef) -> bool:
        """Whether this theorem is exactly `goal`, unconditionally: no hypotheses, structurally the same
        formula (terms are hash-consed, so this is identity of the z3 AST)."""
        return not self.hypotheses and self.conclusion.eq(goal)


def union(*groups: Iterable[z3.BoolRef]) -> tuple[z3.BoolRef, ...]:
    """The formulas of all groups, each once (by AST identity), in first-seen order."""
    seen: dict[int, z3.BoolRef] = {}
    for group in groups:
        for f in group:
            seen.setdefault(f.get_id(), f)
    return tuple(seen.values())


def _mint(conclusion: z3.BoolRef, rule: str, premises: tuple[Theorem, ...] = (),
          hypotheses: tuple[z3.BoolRef, ...] = (), axioms: tuple[z3.BoolRef, ...] = (),
          evidence: tuple[tuple[Obligation, Outcome], ...] = ()) -> Theorem:
    """The theorem a rule concludes: its premises' hypotheses, axioms and evidence carry over."""
    if not z3.is_bool(conclusion):
        raise Refused(f"{rule}: a conclusion must be a formula, not {conclusion.sort()}")
    token = _MINTING.set(True)
    try:
        return Theorem(conclusion,
                       union(*(p.hypotheses for p in premises), hypotheses),
                       union(*(p.axioms for p in premises), axioms),
                       rule,
                       tuple(e for p in premises for e in p.evidence) + evidence)
    finally:
        _MINTING.reset(token)
