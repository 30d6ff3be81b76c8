"""The `Theorem` type, the one door through which the kernel's rules make one, and how each records its proof.

A theorem is a sequent `hypotheses ⊢ conclusion` resting on `axioms`: for every value of its free symbols
(uninterpreted constants and functions: thread ids, input tensors, the uninterpreted `Sum`), if every axiom
instance and every hypothesis holds, the conclusion holds. Free symbols are implicitly universally quantified.
`assume` is the only rule that adds a hypothesis, so a hypothesis names exactly what a proof has not discharged.

Only `semantics.proof` mints theorems: `Theorem(...)` outside `_mint` raises `Forged` (also through
`dataclasses.replace`). Python has no real privacy (`object.__new__` can still build one), so this wall stops
mistakes and careless tactics, and the import contract (pyproject.toml) stops the kernel depending on them.

**The proof as data.** Every rule is declared with `@rule`, which records on the theorem it returns the `Step`
that made it: the rule's name and its inputs by parameter name (terms, numbers, strings, premise theorems,
maps, lanes), not the checker or the time limit. Premises are the theorem objects themselves, so the steps form
a DAG in which a premise used twice is one node; terms are hash-consed z3 ASTs, kept by reference, never copied
or printed. `replay` applies a recorded step's rule again (how `lark check` re-derives a certified proof); a
rule added later needs only the decorator.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import z3

from lean_pool.checker import Checker, Obligation, Outcome

_MINTING: contextvars.ContextVar[bool] = contextvars.ContextVar("minting", default=False)
NOT_INPUTS = frozenset({"checker", "timeout_s", "witness"})   # how a rule is checked, not what it proves


class Forged(TypeError):
    """A `Theorem` was constructed outside the kernel's rules."""


class Refused(ValueError):
    """A rule's inputs do not match its theorem, or a side condition was not proved. `outcome` and
    `obligation` are set when a solver was asked (the outcome may hold a counterexample)."""

    def __init__(self, message: str, obligation: Obligation | None = None, outcome: Outcome | None = None):
        super().__init__(message)
        self.obligation = obligation
        self.outcome = outcome


@dataclass(frozen=True)
class Step:
    """How a theorem was made: the rule's name and its inputs by parameter name (a premise is a `Theorem`)."""

    rule: str
    inputs: tuple[tuple[str, object], ...]

    def premises(self) -> list[Theorem]:
        """The theorems among the inputs (inside tuples too), in order: the step's edges in the proof DAG."""
        found: list[Theorem] = []

        def visit(value: object) -> None:
            if isinstance(value, Theorem):
                found.append(value)
            elif isinstance(value, tuple | list):
                for item in value:
                    visit(item)
        for _, value in self.inputs:
            visit(value)
        return found


@dataclass(frozen=True, eq=False)
class Theorem:
    """`hypotheses ⊢ conclusion` under `axioms`. `rule` names the rule that made it, `step` how it was called
    (set by `@rule`), `premises` the theorems it was concluded from (given or made inside the rule, e.g. its
    side conditions) and `own` the obligations it discharged itself; `evidence` is every obligation (with the
    outcome that proved it) discharged on the way."""

    conclusion: z3.BoolRef
    hypotheses: tuple[z3.BoolRef, ...] = ()
    axioms: tuple[z3.BoolRef, ...] = ()
    rule: str = ""
    premises: tuple[Theorem, ...] = ()
    own: tuple[tuple[Obligation, Outcome], ...] = ()
    step: Step | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not _MINTING.get():
            raise Forged("a Theorem can only be made by a rule of semantics.proof")

    @functools.cached_property
    def evidence(self) -> tuple[tuple[Obligation, Outcome], ...]:
        """The premises' evidence in order, then the theorem's own (computed once, when first asked; premises
        first, without recursion: a proof's chain of steps is deep)."""
        stack = [(self, False)]
        while stack:
            t, expanded = stack.pop()
            if "evidence" in t.__dict__:
                continue
            if not expanded:
                stack.append((t, True))
                stack.extend((p, False) for p in t.premises if "evidence" not in p.__dict__)
                continue
            t.__dict__["evidence"] = tuple(e for p in t.premises for e in p.__dict__["evidence"]) + t.own
        return self.__dict__["evidence"]

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
          evidence: tuple[tuple[Obligation, Outcome], ...] = (), replace_context: bool = False) -> Theorem:
    """The theorem a rule concludes: its premises' hypotheses and axioms carry over, joined by `hypotheses` and
    `axioms` (with `replace_context`, those two are the theorem's whole context: a rule that discharges or
    rewrites its premise's hypotheses says what remains)."""
    if not z3.is_bool(conclusion):
        raise Refused(f"{rule}: a conclusion must be a formula, not {conclusion.sort()}")
    if not replace_context:
        hypotheses = union(*(p.hypotheses for p in premises), hypotheses)
        axioms = union(*(p.axioms for p in premises), axioms)
    token = _MINTING.set(True)
    try:
        return Theorem(conclusion, hypotheses, axioms, rule, premises, evidence)
    finally:
        _MINTING.reset(token)


RULES: dict[str, Callable[..., Theorem]] = {}   # rule name -> the rule (as `@rule` wraps it)


def rule(fn: Callable[..., Theorem]) -> Callable[..., Theorem]:
    """Declare a kernel rule: register it under its name for `replay`, and record on the theorem it returns
    the `Step` of the call (unless the theorem has one already: a rule that returned another rule's theorem
    leaves that rule's step, which replays to the same theorem)."""
    signature = inspect.signature(fn)
    name = fn.__name__
    if name in RULES:
        raise ValueError(f"two kernel rules named {name}")

    @functools.wraps(fn)
    def apply(*args: object, **kwargs: object) -> Theorem:
        theorem = fn(*args, **kwargs)
        if theorem.step is None:
            bound = signature.bind(*args, **kwargs).arguments
            inputs = tuple((k, v) for k, v in bound.items() if k not in NOT_INPUTS)
            object.__setattr__(theorem, "step", Step(name, inputs))
        return theorem

    apply.takes = frozenset(signature.parameters) & NOT_INPUTS   # what replay must pass besides the inputs
    RULES[name] = apply
    return apply


def replay(step: Step, checker: Checker, timeout_s: float) -> Theorem:
    """The theorem `step` makes when its rule is applied again to its inputs, side conditions discharged by
    `checker` (raises `Refused` where the rule refuses or the inputs are not its parameters, `KeyError` for a
    rule the kernel does not have)."""
    apply = RULES[step.rule]
    signature = inspect.signature(apply)
    inputs = dict(step.inputs) | {k: v for k, v in (("checker", checker), ("timeout_s", timeout_s))
                                  if k in apply.takes}
    args: list[object] = []
    params = list(signature.parameters.values())
    star = next((n for n, p in enumerate(params) if p.kind == p.VAR_POSITIONAL), None)
    if star is not None:   # conj(*theorems): the tuple recorded is passed as the arguments it was
        args = [inputs.pop(p.name, None) for p in params[:star]] + list(inputs.pop(params[star].name, ()))
    try:
        signature.bind(*args, **inputs)
    except TypeError as exc:
        raise Refused(f"{step.rule}: its inputs do not fit the rule: {exc}") from None
    return apply(*args, **inputs)
