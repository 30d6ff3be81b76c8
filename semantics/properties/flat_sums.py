"""Nested reference Sums over adjacent dims, flattened into one Sum over the product of their ranges.

A reduction over several dims of a contiguous tensor (a layer norm over (C, H, W), a Frobenius norm over all
of x, an instance norm over (H, W)) is, in the reference, a Sum of Sums: Σ_{a<n₁} Σ_{b<n₂} g(a, b), one
Sum per dim. A kernel that reads the reduced dims as one flat range (`for (i = t; i < C·H·W; i += BS)`)
leaves one flat Sum per thread, which the matcher pairs with one reference comprehension, never with a
nest. Here the reference's nest becomes that one comprehension, where the dims are adjacent: g reads a and
b only through the flat position (a - lo₁)·n₂ + b. The theorem, over the reals, with numeral bounds and
h(m) = g(lo₁, m):

    Σ_{m ∈ [0, n₁·n₂)} h(m) = Σ_{i ∈ [lo₁, lo₁+n₁)} Σ_{r ∈ [0, n₂)} h((i - lo₁)·n₂ + r)     (`sums.regroup`)
                            = Σ_{a ∈ [lo₁, lo₁+n₁)} Σ_{b ∈ [0, n₂)} g(a, b)                  (`sums.reindex_by`)

the second by congruence over the outer index: at a fresh a, the inner Sums agree term by term
(`sums.reindex_sum` with the identity, whose body obligation is g(a, b) = h((a - lo₁)·n₂ + b): bit-vector
arithmetic on the index, which z3's rewriter settles at once when the dims are adjacent). Each equation is a
step of the lane (`compose.Step`), so `compose.close` undoes the rewrite; a nest of k dims is flattened
outside in, k - 1 times. Untrusted: the guess that the dims are adjacent is checked by simplification first
(cheap), and a rule that refuses leaves the nest as it is.

A kernel that keeps the nest as loops (a convolution's taps, a loop over dims) meets it by congruence
(`semantics.properties.nested_sums`), so a lane whose kernel side has a loop nest is left alone.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import SUM, body_at, sum_over
from semantics.proof import Refused, Theorem
from semantics.proof.rules import mp
from semantics.proof.sums import regroup, reindex_by, reindex_sum
from semantics.properties import compose
from semantics.properties.nested_sums import closed_sums, loop_nest
from semantics.terms import mentions, outside_binders

FLAT_S = 10.0       # per side condition: each is index arithmetic the rewriter settles, or the nest stays
MAX_FLATTENS = 16   # dims joined per lane: a KernelBench reduction spans at most four or five


def _numeral(term: z3.BitVecRef) -> int | None:
    term = z3.simplify(term)
    return term.as_long() if z3.is_bv_value(term) else None


def _lambda(term: z3.ExprRef) -> bool:
    return z3.is_quantifier(term) and term.is_lambda()


def _inner_first(sums: list[z3.ExprRef]) -> list[z3.ExprRef]:
    """The closed Sums, those inside another one's body first (a mean's nest inside a variance's): flattened
    there first, it is flattened wherever it occurs, and the outer nest's body then holds the flat Sum."""
    inner = [s for s in sums if any(t is not s and mentions(t, s) for t in sums)]
    return inner + [s for s in sums if all(s is not t for t in inner)]


class SumFlattener:
    """A rewriter for `prefix.Chain`: the reference's closed Sums of Sums over adjacent dims become flat Sums,
    each with its two equations as steps; the kernel side is left as it is."""

    def __init__(self, hypothesis: z3.BoolRef, key: str, checker: Checker, timeout_s: float, record):
        self.hyp, self.key, self.checker, self.record = hypothesis, key, checker, record
        self.timeout_s = min(timeout_s, FLAT_S)
        self.steps: list[compose.Step] = []
        self.count = 0

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        ours = closed_sums(kernel)
        closed = {s.get_id() for s in ours}
        if any(_lambda(s.arg(2)) and loop_nest(s, closed) for s in ours):
            return kernel, reference
        for _ in range(MAX_FLATTENS):
            found = next(((nest, flat) for nest in _inner_first(outside_binders(reference, (SUM,)))
                          if (flat := self._flat(nest)) is not None), None)
            if found is None:
                break
            nest, (grouped, runs, regrouped) = found
            flat = regrouped.conclusion.arg(1).arg(0)
            in_runs = z3.substitute(reference, (nest, grouped))
            self.steps += [compose.Step(kernel, reference, runs), compose.Step(kernel, in_runs, regrouped)]
            reference = z3.substitute(in_runs, (grouped, flat))
        return kernel, reference

    def _flat(self, nest: z3.ExprRef) -> tuple[z3.ExprRef, Theorem, Theorem] | None:
        """(the nest in runs of the flat Sum, ⊢ h → nest = runs, ⊢ h → flat = runs), or None when `nest` is
        no Sum of Sums over adjacent dims or a rule refuses."""
        lo, hi = _numeral(nest.arg(0)), _numeral(nest.arg(1))
        if lo is None or hi is None or hi <= lo or not _lambda(nest.arg(2)):
            return None
        name = f"flat!{self.key}.{self.count}"
        a = z3.BitVec(f"{name}.a", 64)
        inner = body_at(nest.arg(2), a)
        if not (z3.is_app(inner) and inner.decl().eq(SUM) and _lambda(inner.arg(2)) and _numeral(inner.arg(0)) == 0):
            return None
        n1, n2 = hi - lo, _numeral(inner.arg(1))
        if n2 is None or n2 <= 0 or n1 * n2 >= 1 << 63:
            return None
        m, b, r, i = (z3.BitVec(f"{name}.{v}", 64) for v in ("m", "b", "r", "i"))
        first = body_at(nest.arg(2), z3.BitVecVal(lo, 64))
        # (h as it is: simplified, a closed Sum inside it would no longer be the one outside, which the matcher
        # names by one symbol wherever it occurs)
        flat = sum_over(0, n1 * n2, m, body_at(first.arg(2), m))
        lo_v = z3.BitVecVal(lo, 64)
        # the guess: g(a, b) reads a and b only through the flat position (decided by the rules below)
        at = (a - lo_v) * n2 + b
        if not z3.simplify(body_at(inner.arg(2), b)).eq(z3.simplify(body_at(flat.arg(2), at))):
            return None
        grouped = SUM(lo_v, z3.BitVecVal(hi, 64),
                      z3.Lambda([i], sum_over(0, n2, r, body_at(flat.arg(2), flat.arg(0) + (i - lo_v) * n2 + r))))
        self.count += 1
        try:
            regrouped = regroup(flat, grouped, self.checker, self.timeout_s, self.hyp)
            runs = self._runs(nest, grouped, a, z3.BitVec(f"{name}.j", 64))
        except Refused as refused:
            if refused.obligation is not None:
                self.record(refused.obligation, refused.outcome)
            return None
        for theorem in (regrouped, runs):
            for ob, outcome in theorem.evidence:
                self.record(ob, outcome)
        return grouped, runs, regrouped

    def _runs(self, nest: z3.ExprRef, grouped: z3.ExprRef, v: z3.BitVecRef, j: z3.BitVecRef) -> Theorem:
        """⊢ h → nest = grouped by congruence: at a fresh outer index v, the two inner Sums are equal term by
        term (`reindex_sum` with the identity)."""
        inside = z3.And(self.hyp, z3.ULE(grouped.arg(0), v), z3.ULT(v, grouped.arg(1)))
        theirs, ours = body_at(nest.arg(2), v), body_at(grouped.arg(2), v)
        inner = reindex_sum(theirs, ours, (j, j), (j, j), self.checker, self.timeout_s, inside)
        premise = z3.Not(z3.And(inside, ours != theirs))
        body = mp(compose.by_arithmetic(z3.Implies(inner.conclusion, premise), self.checker, self.timeout_s,
                                        "equivalence: a reference Sum's runs agree at every outer index"), inner)
        return reindex_by(nest, grouped, (j, j), (j, j), body, v, self.checker, self.timeout_s, self.hyp)
