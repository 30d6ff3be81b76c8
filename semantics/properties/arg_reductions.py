"""The trusted matcher of arg-extremum folds: when a kernel's ArgMaxFrom equals the reference's.

A kernel fold K is proved equal to a one-lane reference fold R = F(v0, i0, base, N, h) of the same kind
(`semantics.arg_extrema`) by one of three theorems, each premise one obligation under the store's
hypothesis (unsat proves it; a pointwise premise with t a fresh constant, so no quantifier):

* direct: K = F(v0', i0', base', N', f) with v0 = v0', i0 = i0', base = base', N = N' and f[t] = h[t] for
  every t < N. By induction on t the two folds' states (b, i) after t steps are equal: equal at 0, and each
  step is the same function of the state, the element and the recorded index base + t.
* lanes: K = F_d(v0', i0', base', n, f_0, …, f_{d-1}) (a loop unrolled d times) with the starts and bases
  equal, d·n = N over the integers (128-bit) and f_l[t] = h[d·t + l] for every lane l and t < n: the d-lane
  fold is by definition the one-lane fold of its positions p = d·t + l, whose elements are then h's.
* split: K = F(V, K', base₂, n₂, g) (a remainder loop started from an unrolled loop's state) with n₂ ≤ N,
  n₁ = N - n₂, base₂ = base + n₁, g[t] = h[n₁ + t] for t < n₂, V = MaxFrom(v0, 0, n₁, h) (MinFrom for the
  argmin kinds, proved by the comprehension matcher) and K' equal, by these same rules, to F(v0, i0, base,
  n₁, h): the fold over [0, N) is the fold over [n₁, N) started from the state after n₁ steps, which is
  (MaxFrom(v0, 0, n₁, h), F(v0, i0, base, n₁, h)) — the value component of a fold is the running max.

A proved pair is replaced on both sides by R's range term If(in(s), s, i0) of a fresh 64-bit symbol s, with
in(s) = (s = i0 ∨ s - base <ᵤ N): a fold ends on its start index or on a recorded base + p with p < N (by
induction on the steps), so R = If(in(R), R, i0), and a claim proved for every s holds at s = R. The range
is what makes a narrower index register's widening (`int arg` stored as a 64-bit index) exact. Folds of
different kinds (a last-index-on-ties kernel against torch's first index) are never paired: their
comparison stays uninterpreted and is decided only by a counterexample that replays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from semantics.arg_extrema import DECLS, kind_of
from semantics.comprehension import MAX_FROM, MIN_FROM, body_at
from semantics.properties import compose
from semantics.terms import applications

if TYPE_CHECKING:
    from semantics.properties.reductions import Matcher

RUNNING = {"argmax": MAX_FROM, "argmax_last": MAX_FROM, "argmin": MIN_FROM, "argmin_last": MIN_FROM}


def rewrite(matcher: Matcher, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
    """Both sides with every proved pair of outermost folds replaced by a shared symbol."""
    for ours in _outermost(kernel):
        for theirs in _outermost(reference):
            if _equal(matcher, ours, theirs, f"{kind_of(theirs).name} fold {matcher.count}"):
                symbol = _ranged(z3.BitVec(f"reduction!{matcher.key}.{matcher.count}", 64), theirs)
                matcher.count += 1
                matcher.steps.append(compose.Step(kernel, reference, None))
                kernel, reference = z3.substitute(kernel, (ours, symbol)), z3.substitute(reference, (theirs, symbol))
                return rewrite(matcher, kernel, reference)
            matcher.count += 1
    return kernel, reference


def _ranged(symbol: z3.BitVecRef, fold: z3.ExprRef) -> z3.BitVecRef:
    """If(in(s), s, i0): the values the one-lane fold `fold` can end on."""
    _, i0, base, n, _ = fold.children()
    return z3.If(z3.Or(symbol == i0, z3.ULT(symbol - base, n)), symbol, i0)


def _outermost(term: z3.ExprRef) -> list[z3.ExprRef]:
    folds = applications(term, DECLS)
    inner = {f.get_id() for g in folds for a in g.children() for f in applications(a, DECLS)}
    return [f for f in folds if f.get_id() not in inner]


def _equal(matcher: Matcher, ours: z3.ExprRef, theirs: z3.ExprRef, name: str) -> bool:
    """`ours` (the kernel's) = `theirs` (one lane, the reference's or a prefix of it), by a rule above."""
    mine, other = kind_of(ours), kind_of(theirs)
    if mine.name != other.name or other.lanes != 1 or applications(theirs.arg(4), DECLS):
        return False
    v0, i0, base, n, h = theirs.children()
    t = z3.BitVec(f"argfold!{matcher.key}.{matcher.count}.{len(name)}", 64)
    inner = kind_of(ours.arg(1)) if z3.is_app(ours.arg(1)) else None
    if mine.lanes == 1 and inner is not None:
        return _split(matcher, ours, theirs, name, t)
    w0, j0, base_k, m, *lanes = ours.children()
    if any(applications(f, DECLS) for f in lanes):
        return False
    d = len(lanes)
    same_length = z3.ZeroExt(64, m) * d != z3.ZeroExt(64, n) if d > 1 else m != n
    premises = [("start value", w0 != v0), ("start index", j0 != i0), ("recorded index base", base_k != base),
                ("length", same_length)]
    premises += [(f"elements of lane {lane}" if d > 1 else "elements",
                  z3.And(z3.ULT(t, m), body_at(f, t) != body_at(h, t * d + lane if d > 1 else t)))
                 for lane, f in enumerate(lanes)]
    return all(matcher._proved(f"{name}: {what}", formula) for what, formula in premises)


def _split(matcher: Matcher, ours: z3.ExprRef, theirs: z3.ExprRef, name: str, t: z3.BitVecRef) -> bool:
    """The split rule: `ours` continues, over its own n₂ steps, the fold of its start."""
    v0, i0, base, n, h = theirs.children()
    value, inner, base2, n2, g = ours.children()
    n1 = n - n2
    premises = [("remainder within the range", z3.ULT(n, n2)), ("remainder's base", base2 != base + n1),
                ("remainder's elements", z3.And(z3.ULT(t, n2), body_at(g, t) != body_at(h, n1 + t)))]
    if not all(matcher._proved(f"{name}: {what}", formula) for what, formula in premises):
        return False
    running = RUNNING[kind_of(theirs).name](v0, z3.BitVecVal(0, 64), n1, h)
    sub = matcher.within(matcher.hyp, f"{matcher.key}.split{matcher.count}")
    named_value, named_running = sub.rewrite(value, running)
    if not (z3.eq(named_value, named_running) or
            matcher._proved(f"{name}: the remainder's start value", named_value != named_running)):
        return False
    prefix = kind_of(theirs).decl(v0, i0, base, z3.simplify(n1), h)
    return _equal(matcher, inner, prefix, f"{name}, its prefix")
