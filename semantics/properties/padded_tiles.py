"""Padded tiles of sums: the zero terms a last, partial tile adds are cut off before reductions are matched.

A tiled kernel that loads 0 outside the matrices accumulates `Sum(lo, hi, λj. t₁(j) + … + t_c(j))` over
whole tiles (c = the tile width): more terms than the reference's sum, the extra ones zero. When some
reference Sum has fewer terms than the kernel's (so the matcher, which needs equal counts, would fail), the
kernel Sum is rewritten, each step an identity over the reals proved under the hypothesis (the store
happens):

* lanes apart: Sum(lo, hi, Σₗ tₗ) = Σₗ Sum(lo, hi, tₗ) (finite sums commute; always exact);
* zero tail: Sum(lo, hi, tₗ) = Sum(lo, cut, tₗ) when lo ≤ cut ≤ hi and tₗ(j) = 0 for every j in [cut, hi)
  (an obligation; the cut is guessed by folding tₗ at one model's thread, and is kept at hi if unproved);
* decided selections: inside Sum(lo, cut, tₗ), a selection If(c, x, y) becomes y when c is false for every
  j in [lo, cut) (an obligation), or x when c is always true: the terms are unchanged on the range.

Lanes whose premises are not proved stay whole, so nothing is ever dropped without proof; the matcher then
pairs the parts with the reference's sum as usual (a union of Sums, `semantics.properties.reductions`).
The pattern is the one `semantics/properties/padding.py` uses for masked tails, extended to products of guarded
loads and to several lanes per iteration.
"""

from __future__ import annotations

from functools import cached_property

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.comprehension import SUM, is_comprehension, sum_over
from semantics.proof import Refused, Theorem
from semantics.proof.sums import sum_apart
from semantics.properties import compose
from semantics.properties.common import model_of
from semantics.terms import constants, outside_binders

SCAN = 64          # iterations folded, from the end, to guess where a lane's zero tail starts
EQUATION_S = 10.0  # each side condition of a cut's kernel equation (the cut is proved already: this is extra)
MAX_DECISIONS = 24  # selections decided per lane


def _terms(body: z3.ArithRef) -> list[z3.ArithRef]:
    if z3.is_add(body):
        return [t for child in body.children() for t in _terms(child)]
    return [body]


def _zero(term: z3.ExprRef) -> bool:
    return z3.is_rational_value(term) and term.as_fraction() == 0


def _sums(term: z3.ExprRef) -> list[z3.ExprRef]:
    """Sum comprehensions in `term` not under a binder, whose bounds are numerals."""
    return [t for t in outside_binders(term, (SUM,)) if all(z3.is_bv_value(b) for b in t.children()[:2])]


def _size(term: z3.ExprRef) -> int | None:
    lo, hi = (z3.simplify(b) for b in term.children()[:2])
    return hi.as_long() - lo.as_long() if z3.is_bv_value(lo) and z3.is_bv_value(hi) else None


class TileCutter:
    """A rewriter for `prefix.Chain`: kernel Sums with more terms than the reference's lose proved-zero tails."""

    def __init__(self, hypothesis: z3.BoolRef, key: str, checker: Checker, timeout_s: float, record):
        self.hyp, self.key, self.checker, self.timeout_s, self.record = hypothesis, key, checker, timeout_s, record
        self._undecided: set[int] = set()
        self._keep: list = []  # the undecided selections themselves, so their ids are not reused
        self.steps: list[compose.Step] = []   # the cuts, each with its kernel equation, for `compose.close`

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        targets = [n for r in (t for t in _sums(reference) if is_comprehension(t)) if (n := _size(r)) is not None]
        if not targets:
            return kernel, reference
        cut = []   # (kernel Sum, its parts), substituted at once: one pass over a block's thousand partial sums
        fixes = self._fixes(kernel)   # once for all lanes: a block tree has thousands
        for n, s in enumerate(_sums(kernel)):
            lo, hi = (b.as_long() for b in s.children()[:2])
            var = z3.BitVec(f"tile!{self.key}.{n}", 64)
            lanes = _terms(z3.substitute_vars(s.arg(2).body(), var))
            count = len(lanes) * (hi - lo)
            if hi <= lo or count in targets or not any(t < count for t in targets):
                continue
            if all(self._guess(lane, var, lo, hi, fixes) >= hi for lane in lanes):
                continue   # no lane has a zero tail: nothing to cut, and deciding selections cannot fix the count
            # a canonical order (not z3's, which follows term creation), so hints keyed by part number match
            # when a certificate is checked in another process
            lanes = sorted(lanes, key=lambda t: t.sexpr())
            parts = [self._lane(lane, var, lo, hi, f"{n}.{i}", fixes) for i, lane in enumerate(lanes)]
            cut.append((s, z3.Sum(parts) if len(parts) > 1 else parts[0], tuple(zip(lanes, parts, strict=True)), var))
        self.steps = []
        for s, new, lanes, var in cut:   # one step per cut Sum, undone by its kernel equation (`sum_apart`)
            self.steps.append(compose.Step(kernel, reference, self._equation(s, lanes, var)))
            kernel = z3.substitute(kernel, (s, new))
        return kernel, reference

    def _equation(self, whole: z3.ExprRef, lanes: tuple, var: z3.BitVecRef) -> Theorem | None:
        """⊢ h → whole = Σ heads by the kernel's `sum_apart` (its side conditions recorded), or None."""
        try:
            theorem = sum_apart(whole, tuple((var, lane, head) for lane, head in lanes), self.checker,
                                min(self.timeout_s, EQUATION_S), under=self.hyp)
        except Refused as refused:
            if refused.obligation is not None:
                self.record(refused.obligation, refused.outcome)
            return None
        for ob, outcome in theorem.evidence:
            self.record(ob, outcome)
        return theorem

    def _lane(self, lane: z3.ArithRef, var: z3.BitVecRef, lo: int, hi: int, name: str,
              fixes: list | None) -> z3.ArithRef:
        cut = self._guess(lane, var, lo, hi, fixes)
        if cut < hi and not self._proved(f"terms {cut}.. of kernel lane {name} are zero",
                                         z3.And(z3.ULE(cut, var), z3.ULT(var, hi), lane != 0)):
            cut = hi
        if cut <= lo:
            return z3.RealVal(0)
        in_range = z3.And(z3.ULE(lo, var), z3.ULT(var, cut))
        return sum_over(lo, cut, var, self._decide(lane, in_range, name))

    def _decide(self, lane: z3.ArithRef, in_range: z3.BoolRef, name: str) -> z3.ArithRef:
        for _ in range(MAX_DECISIONS):
            choice = next((t for t in _selections(lane) if t.get_id() not in self._undecided), None)
            if choice is None:
                return lane
            cond, then, other = choice.children()
            if self._proved(f"a selection in kernel lane {name} is never taken", z3.And(in_range, cond)):
                lane = z3.substitute(lane, (choice, other))
            elif self._proved(f"a selection in kernel lane {name} is always taken", z3.And(in_range, z3.Not(cond))):
                lane = z3.substitute(lane, (choice, then))
            else:
                self._undecided.add(choice.get_id())
                self._keep.append(choice)
        return lane

    def _guess(self, lane: z3.ArithRef, var: z3.BitVecRef, lo: int, hi: int, fixes: list | None) -> int:
        """Where the lane's zero tail starts at one model's thread (hi when it has none): a guess."""
        if fixes is None:
            return hi
        cut = hi
        while cut > max(lo, hi - SCAN):
            folded = z3.simplify(z3.substitute(lane, *fixes, (var, z3.BitVecVal(cut - 1, 64))))
            if not _zero(folded):
                break
            cut -= 1
        return cut

    @cached_property
    def _hypothesis_model(self) -> z3.ModelRef | None:
        return model_of(self.hyp)

    def _fixes(self, kernel: z3.ExprRef) -> list | None:
        """The model's values of the kernel's bit-vector symbols (the thread; a lane's iteration symbol is
        fresh, never among them)."""
        if self._hypothesis_model is None:
            return None
        return [(c, self._hypothesis_model.eval(c, model_completion=True)) for c in constants(kernel) if z3.is_bv(c)]

    def _proved(self, name: str, formula: z3.BoolRef) -> bool:
        ob = Obligation(f"equivalence: {name}", "equivalence", z3.And(self.hyp, formula))
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED


def _selections(term: z3.ExprRef) -> list[z3.ExprRef]:
    """Real-valued If subterms, outermost first."""
    found, todo, seen = [], [term], set()
    while todo:
        t = todo.pop(0)
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        if z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_real(t):
            found.append(t)
        todo.extend(t.children())
    return found
