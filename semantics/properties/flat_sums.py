"""Nested reference Sums over several dims, flattened into one Sum over the product of their ranges.

A reduction over several dims (a layer norm over (C, H, W), a Frobenius norm over all of x, a batch norm over
(N, H, W)) is, in the reference, a Sum of Sums: Σ_{a ∈ [lo, lo+n₁)} Σ_{b<n₂} g(a, b), one Sum per dim. A kernel
that reads the reduced dims as one flat range (`for (i = t; i < N·H·W; i += BS)`) leaves one flat Sum per
thread, which the matcher pairs with one reference comprehension, never with a nest. Here the nest becomes
that one comprehension. The theorem, over the reals, for numeral bounds and any h with h((a - lo)·n₂ + b) =
g(a, b) on the nest's range:

    Σ_{m ∈ [0, n₁·n₂)} h(m) = Σ_{i ∈ [lo, lo+n₁)} Σ_{r ∈ [0, n₂)} h((i - lo)·n₂ + r)     (`sums.regroup`)
                            = Σ_{a ∈ [lo, lo+n₁)} Σ_{b ∈ [0, n₂)} g(a, b)                  (`sums.reindex_by`)

the second by congruence over the outer index: at a fresh a, the inner Sums agree term by term
(`matched_sums.reindex_sum` with the identity, whose body obligation is h((a - lo)·n₂ + b) = g(a, b)). Two choices
of h, both exact: where the dims are adjacent (g reads a and b only through the flat position, which
simplification shows), h(m) = g(lo, m), a plain index; elsewhere (a batch norm's N and H·W, with C between
them), h(m) = g(lo + m / n₂, m % n₂), the position decoded as a kernel decodes its flat loop index. A nest
of k dims is flattened inside out (the inner ones at a fresh outer index, lifted by `reindex_by`), and the
equations of each level are joined by `compose.by_arithmetic` into one ⊢ h → flat = nest, the lane's step
(`compose.Step`), so `compose.close` undoes the rewrite. Untrusted: a rule that refuses leaves the nest as
it is.

A kernel that keeps the nest as loops (a convolution over channels and taps, a loop over dims) meets it by
congruence (`semantics.properties.nested_sums`), so a lane whose kernel side has a loop nest is left alone;
and a small inner range (a window's taps) is decoded by division only from MIN_DECODED elements on.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import SUM, body_at, sum_over
from semantics.proof import Refused, Theorem
from semantics.proof.rules import conj, mp
from semantics.proof.sums import regroup, reindex_by
from semantics.properties import compose
from semantics.properties.matched_sums import reindex_sum
from semantics.properties.nested_sums import closed_sums, loop_nest
from semantics.terms import mentions, outside_binders

FLAT_S = 10.0       # per side condition: each is index arithmetic on a few numbers, or the nest stays
MAX_FLATTENS = 16   # nests flattened per lane: a norm has two or three (a mean's, a variance's)
MIN_DECODED = 32    # the inner range from which a position is decoded by division: a reduced dim, not a window

Flat = tuple[z3.ExprRef, Theorem]   # a flat Sum and ⊢ under → flat = nest


def _numeral(term: z3.BitVecRef) -> int | None:
    term = z3.simplify(term)
    return term.as_long() if z3.is_bv_value(term) else None


def _lambda(term: z3.ExprRef) -> bool:
    return z3.is_quantifier(term) and term.is_lambda()


def _is_sum(term: z3.ExprRef) -> bool:
    return z3.is_app(term) and term.decl().eq(SUM) and _lambda(term.arg(2))


def _inner_first(sums: list[z3.ExprRef]) -> list[z3.ExprRef]:
    """The closed Sums, those inside another one's body first (a mean's nest inside a variance's): flattened
    there first, it is flattened wherever it occurs, and the outer nest's body then holds the flat Sum."""
    inner = [s for s in sums if any(t is not s and mentions(t, s) for t in sums)]
    return inner + [s for s in sums if all(s is not t for t in inner)]


class SumFlattener:
    """A rewriter for `prefix.Chain`: the reference's closed Sums of Sums become flat Sums, each with its
    equation as a step; the kernel side is left as it is."""

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
                          if (flat := self._recorded(nest)) is not None), None)
            if found is None:
                break
            nest, (flat, equation) = found
            self.steps.append(compose.Step(kernel, reference, equation))
            reference = z3.substitute(reference, (nest, flat))
        return kernel, reference

    def _recorded(self, nest: z3.ExprRef) -> Flat | None:
        """`_flatten` under the hypothesis, its obligations recorded (a refused one too)."""
        try:
            found = self._flatten(nest, self.hyp)
        except Refused as refused:
            if refused.obligation is not None:
                self.record(refused.obligation, refused.outcome)
            return None
        if found is not None:
            for ob, outcome in found[1].evidence:
                self.record(ob, outcome)
        return found

    def _flatten(self, nest: z3.ExprRef, under: z3.BoolRef) -> Flat | None:
        """The flat Sum of the nest `nest` and ⊢ under → flat = nest; None when `nest` is no Sum of Sums with
        numeral bounds. Its inner nest is flattened first, at a fresh outer index."""
        lo, hi = _numeral(nest.arg(0)), _numeral(nest.arg(1))
        if lo is None or hi is None or hi <= lo or not _is_sum(nest):
            return None
        name = f"flat!{self.key}.{self.count}"
        self.count += 1
        v = z3.BitVec(f"{name}.v", 64)
        inner = body_at(nest.arg(2), v)
        if not (_is_sum(inner) and _numeral(inner.arg(0)) == 0 and _numeral(inner.arg(1)) is not None):
            return None
        inside = z3.And(under, z3.ULE(nest.arg(0), v), z3.ULT(v, nest.arg(1)))
        deeper = self._flatten(inner, inside) if _is_sum(body_at(inner.arg(2), z3.BitVec(f"{name}.w", 64))) \
            else None
        steps: list[Theorem] = []
        current = nest
        if deeper is not None:   # the inner dims first: Σ_a (inner nest at a) = Σ_a (its flat Sum at a)
            current = SUM(nest.arg(0), nest.arg(1), z3.Lambda([v], deeper[0]))
            steps.append(self._congruent(current, nest, v, under, deeper[1]))
        top = self._regrouped(current, lo, hi, name, under)
        if top is None:
            return None if deeper is None else (current, steps[0])
        flat, more = top
        steps += more
        claim = z3.Implies(under, flat == nest)
        joined = conj(*steps)
        return flat, mp(compose.by_arithmetic(z3.Implies(joined.conclusion, claim), self.checker, self.timeout_s,
                                              "equivalence: a reference nest of Sums is its flat Sum"), joined)

    def _regrouped(self, nest: z3.ExprRef, lo: int, hi: int, name: str,
                   under: z3.BoolRef) -> tuple[z3.ExprRef, list[Theorem]] | None:
        """The flat Sum of the two-level nest Σ_a Σ_b g(a, b), with ⊢ under → flat = runs and ⊢ under → nest =
        runs (runs: the flat Sum cut into the nest's rows); None when no h reads the position (the inner range
        too small to decode)."""
        n1, n2 = hi - lo, _numeral(body_at(nest.arg(2), z3.BitVec(f"{name}.a", 64)).arg(1))
        if n2 <= 0 or n1 * n2 >= 1 << 63:
            return None
        m, b, r, i, j = (z3.BitVec(f"{name}.{s}", 64) for s in ("m", "b", "r", "i", "j"))
        a = z3.BitVec(f"{name}.a", 64)
        lo_v = nest.arg(0)

        def g(row: z3.BitVecRef, column: z3.BitVecRef) -> z3.ArithRef:
            return body_at(body_at(nest.arg(2), row).arg(2), column)
        # adjacent dims: g reads a and b only through the flat position (a guess; the rules below decide)
        flat = sum_over(0, n1 * n2, m, g(lo_v, m))
        if not z3.simplify(g(a, b)).eq(z3.simplify(body_at(flat.arg(2), (a - lo_v) * n2 + b))):
            if n2 < MIN_DECODED:
                return None
            flat = sum_over(0, n1 * n2, m, g(lo_v + z3.UDiv(m, n2), z3.URem(m, n2)))
        grouped = SUM(nest.arg(0), nest.arg(1),
                      z3.Lambda([i], sum_over(0, n2, r, body_at(flat.arg(2), flat.arg(0) + (i - lo_v) * n2 + r))))
        regrouped = regroup(flat, grouped, self.checker, self.timeout_s, under)
        inside = z3.And(under, z3.ULE(nest.arg(0), a), z3.ULT(a, nest.arg(1)))
        rows = reindex_sum(body_at(nest.arg(2), a), body_at(grouped.arg(2), a), (j, j), (j, j), self.checker,
                           self.timeout_s, inside)
        runs = self._congruent(nest, grouped, a, under, rows)
        return flat, [regrouped, runs]

    def _congruent(self, source: z3.ExprRef, target: z3.ExprRef, v: z3.BitVecRef, under: z3.BoolRef,
                   rows: Theorem) -> Theorem:
        """⊢ under → source = target (two Sums over the target's range) from ⊢ inside → f(v) = g(v) (or
        g(v) = f(v)) about their bodies at the fresh index v, inside = under ∧ v in the range."""
        f, g = body_at(source.arg(2), v), body_at(target.arg(2), v)
        inside = z3.And(under, z3.ULE(target.arg(0), v), z3.ULT(v, target.arg(1)))
        premise = z3.Not(z3.And(inside, g != f))
        body = mp(compose.by_arithmetic(z3.Implies(rows.conclusion, premise), self.checker, self.timeout_s,
                                        "equivalence: a nest's rows agree at every outer index"), rows)
        return reindex_by(source, target, (v, v), (v, v), body, v, self.checker, self.timeout_s, under)
