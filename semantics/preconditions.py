"""Value-range preconditions on integer inputs: `[tensors] idx = { range = [lo, hi] }` (DESIGN §2.1).

An embedding lookup or a cross-entropy's target column indexes memory by values read from an input; without
knowing those values lie in range, every such access may be out of bounds. The manifest may state that every
element of an integer input lies in [lo, hi]: a precondition of the task, listed in the result like an
axiom (`precondition idx ∈ [0, 50256]`), so the verdict says what it rests on.

The kernel's `by_smt` gives each obligation the precondition's instances at exactly the reads it mentions:
for every application `idx(t)` of a ranged input's contents with no bound variable in it, the fact
lo ≤ idx(t) ≤ hi (signed, at the element's width), listed among the theorem's axiom instances like an
ideal function's facts. Every instance is true of every input the precondition admits, so a theorem under
them holds for all such inputs; a read under a binder (inside a comprehension) gets no instance, which only
weakens what can be proved. A model of the strengthened obligation reads in-range values, so a witness
respects the precondition too. The ranges of the task being verified are a context variable that
`semantics.verdict.verify` sets (`stated`): the same ranges whichever property builds the obligation.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import z3

from semantics.terms import subterms, under_binder

# contents function name -> (lo, hi) of the task being verified
_RANGES: contextvars.ContextVar[tuple[tuple[str, int, int], ...]] = contextvars.ContextVar("ranges", default=())


def describe(name: str, lo: int, hi: int) -> str:
    """How a result lists the precondition on buffer `name`."""
    return f"precondition {name} ∈ [{lo}, {hi}]"


@contextlib.contextmanager
def stated(ranges: dict[str, tuple[int, int]]) -> Iterator[None]:
    """Within the block, every `by_smt` of this thread rests on these ranges (contents name -> [lo, hi])."""
    token = _RANGES.set(tuple((name, lo, hi) for name, (lo, hi) in sorted(ranges.items())))
    try:
        yield
    finally:
        _RANGES.reset(token)


def facts(formula: z3.BoolRef) -> tuple[z3.BoolRef, ...]:
    """lo ≤ x(t) ≤ hi for each ground read x(t) of a ranged input in `formula`, under the stated ranges."""
    ranges = {name: (lo, hi) for name, lo, hi in _RANGES.get()}
    if not ranges:
        return ()
    found = []
    for t in subterms(formula):
        if z3.is_app(t) and t.num_args() == 1 and z3.is_bv(t) and t.decl().name() in ranges \
                and not under_binder(t.arg(0)):
            lo, hi = ranges[t.decl().name()]
            found.append(z3.And(t >= lo, t <= hi))
    return tuple(found)


def strengthened(formula: z3.BoolRef) -> z3.BoolRef:
    """`formula` under the precondition instances of its reads (`facts`): what an obligation that the checks
    ask the checker directly (not through `by_smt`) must state, so that its models, which become witnesses,
    read in-range values only. Unchanged where no ranged input is read."""
    found = facts(formula)
    return z3.And(formula, *found) if found else formula
