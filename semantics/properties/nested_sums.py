"""Nested Sums: a loop nest's Sum of Sums matched against the reference's, by congruence over the outer index.

A loop inside a loop leaves a Sum whose body holds the inner loop's Sum (`semantics.ptx.symexec`). The
reference has a Sum of Sums too (a sum over two dimensions) or one Sum over a flattened range (a matmul's
k). The matcher (`semantics.properties.reductions`) compares one comprehension with another; here a nested
pair is reduced to a comparison of their bodies at one outer index. The theorems, over the reals, with
concrete 64-bit bounds:

* congruence: if K(i) = R(i - lo) for every i in [lo, lo + n), then
  Sum(lo, lo + n, λi. K(i)) = Σ_{q < n} R(q) — the same finite sum, term by term.
* shift: Sum(a, a + n, λq. B(q)) = Σ_{q < n} B(a + q).
* split: Sum(a, a + n·b, λm. h(m)) = Σ_{q < n} Sum(0, b, λr. h(a + q·b + r)) — the range cut into n
  consecutive pieces of b (a + n·b is the Sum's own upper bound, so no index wraps).

The premise K(i) = R(i - lo) is proved with i a fresh constant (so for every i) under the store's
hypothesis and lo ≤ i < lo + n, by a matcher of its own (the bodies' inner Sums are matched the same way,
which is how three nested loops go) and a final obligation on what it leaves. Only the outer bounds must be
concrete; the inner ones may depend on i.

A kernel whose inner loop is unrolled (a fused depthwise-separable convolution: Σ_c pw[c] · (a 3 × 3 window
of guarded taps)) has no Sum in its body while the reference's body holds the window's Sum. The congruence is
the same; the bodies are then compared as a padded window is (`guarded_sums`: the kernel's guards moved onto
its summands, the reference's small constant window unrolled), those steps closed with the matcher's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from semantics.comprehension import COMPREHENSIONS, SUM, body_at, sum_over
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt, conj, mp, sym
from semantics.proof.sums import regroup, reindex_by
from semantics.properties import compose, guarded_reads, guarded_sums
from semantics.terms import applies_beyond, reaching

if TYPE_CHECKING:
    from semantics.properties.reductions import Matcher

COMPOSE_TIMEOUT_S = 10.0   # each side condition of the restatement: the pair is proved already, this is extra


def closed_sums(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The Sum applications of `term` outside every binder (a Sum inside a lambda may speak of its variable)."""
    found, seen, todo = [], set(), [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        if t.decl() == SUM:
            found.append(t)
        else:
            todo.extend(t.children())
    return found


def loop_nest(term: z3.ExprRef, closed: set[int]) -> bool:
    """Whether the Sum `term` (its body a lambda) is a loop nest: its body holds a Sum other than the `closed`
    ones (the ids of the term's Sums outside binders, `closed_sums`), which may move with its index. A closed
    Sum in the body (a mean inside a variance's Σ (x - mean)², the same at every index) is a value of its own,
    named by the matcher's unions first; compared by congruence it would only cost a failed query."""
    return applies_beyond(term.arg(2).body(), (SUM,), closed)


def _concrete(value: z3.BitVecRef) -> int | None:
    value = z3.simplify(value)
    return value.as_long() if z3.is_bv_value(value) else None


def _bounds(term: z3.ExprRef) -> tuple[int, int] | None:
    """The Sum's concrete bounds, when they are and its body is a lambda (not, say, a constant array)."""
    lo, hi = _concrete(term.arg(0)), _concrete(term.arg(1))
    body = term.arg(2)
    lambda_body = z3.is_quantifier(body) and body.is_lambda()
    return (lo, hi) if lambda_body and lo is not None and hi is not None and lo <= hi else None


def _body_at(term: z3.ExprRef, index: z3.BitVecRef) -> z3.ArithRef:
    """The Sum's body with its bound variable at `index` (a Sum whose `_bounds` are known)."""
    return body_at(term.arg(2), index)


def reference_piece(cr: z3.ExprRef, n: int, q: z3.BitVecRef, name: str) -> z3.ArithRef | None:
    """The q-th of n pieces of the reference Sum `cr`: its body at a + q when it has n terms (shift), the Sum
    of its q-th run of b consecutive terms when it has n·b (split); None otherwise."""
    bounds = _bounds(cr)
    if bounds is None or n <= 0:
        return None
    a, size = bounds[0], bounds[1] - bounds[0]
    if size == n:
        return _body_at(cr, a + q)
    if size % n or size == 0:
        return None
    b = size // n
    r = z3.BitVec(f"{name}.r", 64)
    return sum_over(0, b, r, _body_at(cr, a + q * b + r))


def rewrite(matcher: Matcher, kernel: z3.ExprRef, reference: z3.ExprRef,
            unrolled: bool = False) -> tuple[z3.ExprRef, z3.ExprRef]:
    """Each closed kernel Sum whose body holds a Sum (with `unrolled`, instead, one whose inner loop is unrolled
    against a reference window nest: the matcher's last resort, tried once nothing else met the Sums), proved
    equal to a closed reference Sum by congruence, becomes one symbol on both sides; each such rewrite is a
    step of `matcher.steps`."""
    progress = True
    while progress:
        progress = False
        holding = reaching(kernel, (SUM,))   # one walk of the whole term: a body's answer is its own, wherever
        theirs = closed_sums(reference)      # both change only when a rewrite ends the round
        ours = closed_sums(kernel)
        closed = {s.get_id() for s in ours}
        closed_theirs = {s.get_id() for s in theirs}
        for ck in ours:
            if _bounds(ck) is None:
                continue
            nest = not unrolled and ck.arg(2).body().get_id() in holding and loop_nest(ck, closed)
            for cr in theirs:
                if not (nest or unrolled and _unrolled_nest(ck, cr, closed_theirs)):
                    continue
                congruent, equation = _congruent(matcher, ck, cr)
                if congruent:
                    symbol = matcher._symbol(cr)
                    matcher.steps.append(compose.Step(kernel, reference, equation, (symbol, ck)))
                    kernel = z3.substitute(kernel, (ck, symbol))
                    reference = z3.substitute(reference, (cr, symbol))
                    progress = True
                    break
            if progress:
                break
    return kernel, reference


def _unrolled_nest(ck: z3.ExprRef, cr: z3.ExprRef, closed: set[int]) -> bool:
    """Whether the kernel Sum's body holds no comprehension (its inner loop unrolled) while the reference Sum
    is a loop nest whose inner Sums are small constant windows (`guarded_sums`' unroll reads them)."""
    if _bounds(cr) is None or reaching(ck.arg(2).body(), COMPREHENSIONS) or not loop_nest(cr, closed):
        return False
    inner = closed_sums(_body_at(cr, z3.BitVecVal(0, 64)))
    return bool(inner) and all(guarded_sums.window_terms(t) is not None for t in inner)


def _congruent(matcher: Matcher, ck: z3.ExprRef, cr: z3.ExprRef) -> tuple[bool, Theorem | None]:
    """Whether Sum ck = Sum cr, proved by congruence: their bodies agree at every outer index; and, for a shift
    (the reference has as many terms), the kernel theorem ⊢ h → ck = cr (`reindex_by` from the body theorem,
    the inner comparison closed through its own steps), else None."""
    lo, hi = _bounds(ck)
    matcher.nests += 1
    key = f"{matcher.key}.nest{matcher.nests}"
    i = z3.BitVec(f"nest!{key}.i", 64)
    piece = reference_piece(cr, hi - lo, i - lo, f"nest!{key}")
    if piece is None:
        return False, None
    inside = z3.And(matcher.hyp, z3.ULE(ck.arg(0), i), z3.ULT(i, ck.arg(1)))
    sub = matcher.within(inside, key)
    body_k, body_r, windows = _as_windows(matcher, inside, _body_at(ck, i), piece)
    body_k, body_r = sub.rewrite(body_k, body_r)
    # (the premise's own symbols speak of i: their meanings stay in `sub`, only cr's symbol escapes)
    comparison = compose.comparison(inside, body_k, body_r)
    name = f"equivalence: a nested kernel Sum's body equals the reference's piece at every outer index in [{lo}, {hi})"
    claim = None
    if windows and guarded_reads.applies(comparison, body_k, body_r):   # a window's taps, read by read
        claim = guarded_reads.prove(comparison, body_k, body_r, inside, matcher.checker, matcher.timeout_s, name,
                                    matcher.record)
    if claim is None:
        try:
            claim = by_smt(comparison, matcher.checker, matcher.timeout_s, name, "equivalence")
        except Refused as refused:
            matcher.record(refused.obligation, refused.outcome)
            return False, None
        matcher.record(*claim.evidence[0])
    body = compose.close(claim, inside, windows + sub.steps)
    return True, None if body is None else _equation(matcher, ck, cr, body, i, lo, hi, key)


def _as_windows(matcher: Matcher, inside: z3.BoolRef, body_k: z3.ExprRef,
                piece: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef, list[compose.Step]]:
    """A comprehension-free kernel body (an unrolled inner loop) and the reference's piece as padded windows:
    the kernel's conditional accumulations as guarded summands, the piece's small constant windows unrolled
    (`guarded_sums`), with the steps that undo it; a body that holds a Sum is left to the matcher."""
    if reaching(body_k, COMPREHENSIONS):
        return body_k, piece, []
    body_k, body_r, steps = guarded_sums.rewrite(body_k, piece, inside, matcher.checker, matcher.timeout_s,
                                                 matcher.record)
    if not steps:   # the taps were guarded summands already: the window alone
        body_r, steps = guarded_sums.unrolled_reference(body_k, body_r, inside, matcher.checker, matcher.timeout_s,
                                                        matcher.record)
    return body_k, body_r, steps


def _equation(matcher: Matcher, ck: z3.ExprRef, cr: z3.ExprRef, body: Theorem, i: z3.BitVecRef, lo: int, hi: int,
              key: str) -> Theorem | None:
    """⊢ h → ck = cr from the body theorem at the fresh outer index i: `reindex_by` against cr itself for a
    shift; for a split, `regroup` cr into the runs the pieces are, `reindex_by` of those against ck, and a
    `compose.by_arithmetic`/`mp` step joining the two. None when a rule refuses."""
    a, size = _bounds(cr)[0], _bounds(cr)[1] - _bounds(cr)[0]
    var, m = z3.BitVec(f"nest!{key}.phi", 64), z3.BitVec(f"nest!{key}.psi", 64)
    timeout_s = min(matcher.timeout_s, COMPOSE_TIMEOUT_S)
    try:
        if size == hi - lo:
            equation = sym(reindex_by(cr, ck, (var, a + (var - lo)), (m, lo + (m - a)), body, i, matcher.checker,
                                      timeout_s, matcher.hyp))
        else:
            grouped = SUM(ck.arg(0), ck.arg(1), z3.Lambda([i], _piece(body)))
            runs = regroup(cr, grouped, matcher.checker, timeout_s, matcher.hyp)
            pieces = reindex_by(grouped, ck, (var, var), (m, m), body, i, matcher.checker, timeout_s, matcher.hyp)
            joined = conj(runs, pieces)
            step = compose.by_arithmetic(z3.Implies(joined.conclusion, z3.Implies(matcher.hyp, ck == cr)),
                                         matcher.checker, timeout_s,
                                         "equivalence: a nested kernel Sum is the reference's Sum in runs")
            equation = mp(step, joined)
    except Refused as refused:
        if refused.obligation is not None:
            matcher.record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in equation.evidence[len(body.evidence):]:   # the body's were recorded as they were made
        matcher.record(ob, outcome)
    return equation


def _piece(body: Theorem) -> z3.ArithRef:
    """The reference's piece the body theorem ¬((h ∧ i ∈ range) ∧ K(i) ≠ piece(i)) compares with."""
    return body.conclusion.arg(0).arg(1).arg(1)
