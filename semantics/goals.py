"""The top goals of the properties and how theorems meet them: what `verified` rests on.

Each property's checks state its top goals (`Goals`: per site, the statement or statements a theorem may state
to establish it); `established` holds a property `proved` only where kernel theorems without hypotheses state
every one. Both `lark verify` and `lark check` decide this way, from goals the trusted semantics states itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import z3

from semantics.proof import Theorem
from semantics.properties.common import NOT_CHECKED, PROVED, UNKNOWN, VIOLATED, PropertyResult


class Deferred:
    """A goal's further accepted statement, stated only when first asked for (`accepted_forms`). Some
    alternatives are large terms (a warp-wide store's race goal substitutes all 32 lanes into the stored
    value) that a goal almost never needs, because a theorem states its first form: building them up front
    cost block softmax its whole budget. Stating it later changes nothing: the statement is the same term."""

    def __init__(self, build: Callable[[], z3.BoolRef | None]) -> None:
        self._build = build
        self._form: z3.BoolRef | None = None
        self._built = False

    def form(self) -> z3.BoolRef | None:
        if not self._built:
            self._form, self._built = self._build(), True
        return self._form


Form = z3.BoolRef | Deferred
Goals = list[tuple[str, Form | tuple[Form, ...] | None]]   # (what, accepted statement(s))


def accepted_forms(forms: Form | tuple[Form, ...] | None) -> Iterator[z3.BoolRef]:
    """A goal's accepted statements in order (`Goals`: one, several, or None for none); a `Deferred` one is
    stated only when the iteration reaches it, and left out where it states nothing."""
    listed = () if forms is None else (forms,) if isinstance(forms, z3.ExprRef | Deferred) else forms
    for form in listed:
        form = form.form() if isinstance(form, Deferred) else form
        if form is not None:
            yield form


def identity(statement: z3.BoolRef) -> object:
    """A statement's key for `standings`: the AST itself (hash-consed: one key per term)."""
    return statement.get_id()


def standings(result: PropertyResult, goals: Goals, key: Callable[[z3.BoolRef], object] = identity) \
        -> list[tuple[str, str]]:
    """Each top goal of a property and how it stands: `stated` exactly by a theorem of the kernel without
    hypotheses (one of its accepted forms; "exactly" is `key`'s: the AST, or for `lark check`, which derives the
    goals in another process, the AST up to the order of commutative arguments, `semantics.checkers.Known.key`),
    `rewritten` (an equivalence lane whose sides tactics rewrote, stated in the rewritten form: the part not yet
    composed by kernel rules), else `open`, or `no form` where the checks gave no statement to prove (never
    established)."""
    stated = {key(t.conclusion) for t in result.theorems if not t.hypotheses}
    found = []
    for what, forms in goals:
        if any(key(f) in stated for f in accepted_forms(forms)):
            found.append((what, "stated"))
        elif any(_rewrites(f, result.rewritten.get(f.get_id())) for f in accepted_forms(forms)):
            found.append((what, "rewritten"))
        else:
            found.append((what, "open" if next(accepted_forms(forms), None) is not None else "no form"))
    return found


def established(results: dict[str, PropertyResult], expected: dict[str, Goals],
                accept: tuple[str, ...] = ("stated", "rewritten"),
                key: Callable[[z3.BoolRef], object] = identity) -> dict[str, dict[str, int]]:
    """A property is `proved` only where every one of its top goals stands as one of `accept` (`standings`);
    otherwise it becomes `unknown`, naming the first goal that is not. Returns, per proved property, how
    many goals there were and how each was met, up to the first that was not."""
    counts = {}
    for prop, goals in expected.items():
        result = results[prop]
        if result.state != PROVED:
            continue
        stand = standings(result, goals, key)
        unmet = next((k for k, (_, how) in enumerate(stand) if how not in accept), len(stand))
        met = [how for _, how in stand[:unmet]]
        counts[prop] = {"goals": len(goals), "stated": met.count("stated"), "rewritten": met.count("rewritten")}
        if unmet < len(stand):
            result.downgrade(UNKNOWN, f"no kernel theorem states the goal of {stand[unmet][0]}")
    return counts


def _comparison(statement: z3.BoolRef) -> z3.BoolRef | None:
    """h of a statement ¬(h ∧ a ≠ b), else None."""
    if z3.is_not(statement) and z3.is_and(statement.arg(0)) and statement.arg(0).num_args() == 2 \
            and z3.is_distinct(statement.arg(0).arg(1)):
        return statement.arg(0).arg(0)
    return None


def _rewrites(goal: z3.BoolRef, theorem: Theorem | None) -> bool:
    """Whether an unconditional theorem compares, under the goal's own hypothesis, what tactics rewrote the
    goal's two sides to: ¬(h ∧ a' ≠ b') for the goal ¬(h ∧ a ≠ b)."""
    if theorem is None or theorem.hypotheses:
        return False
    h, h2 = _comparison(goal), _comparison(theorem.conclusion)
    return h is not None and h2 is not None and h.eq(h2)


def merge(results: dict[str, PropertyResult]) -> tuple[str, str | None]:
    """The verdict of the property states (worst first: refuted, unknown, verified); `not_applicable` holds like
    `proved` (it is never violated). Only `established` makes a property `proved`."""
    states = {p: r.state for p, r in results.items()}
    if VIOLATED in states.values():
        return "refuted", None
    reasons = [reason for r in results.values() for reason in r.reasons]
    if UNKNOWN in states.values() or NOT_CHECKED in states.values():
        return "unknown", "; ".join(reasons) or "not every property was checked"
    return "verified", None
