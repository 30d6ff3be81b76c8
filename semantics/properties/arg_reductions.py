"""The trusted matcher of arg-extremum folds: when a kernel's ArgMaxFrom equals the reference's.

Theorem: two folds of one kind (`semantics.arg_extrema`), F(v0, i0, base, n, f) and F(v0', i0', base', n', f'),
are equal when v0 = v0', i0 = i0', base = base', n = n' and f[t] = f'[t] for every t < n (unsigned). By
induction on t the two folds' states (b, i) after t steps are equal for every t ≤ n: equal at 0 (the starts),
and each step is the same function of the state, the element f[t] = f'[t] and the recorded index
base + t = base' + t. Each premise is one obligation under the store's hypothesis (unsat proves it; the
pointwise one with t a fresh constant, so no quantifier). A proved pair is replaced on both sides by one
fresh 64-bit symbol. Folds of different kinds (a last-index-on-ties kernel against torch's first index) are
never paired: their comparison stays uninterpreted and is decided only by a counterexample that replays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from semantics.arg_extrema import DECLS, kind_of
from semantics.comprehension import body_at
from semantics.properties import compose
from semantics.terms import applications

if TYPE_CHECKING:
    from semantics.properties.reductions import Matcher


def _premises(kernel: z3.ExprRef, reference: z3.ExprRef, t: z3.BitVecRef) -> list[tuple[str, z3.BoolRef]]:
    """(name, the negation of one premise) for the pair."""
    (v0, i0, base, n, f), (w0, j0, base_r, m, g) = kernel.children(), reference.children()
    return [("start value", v0 != w0), ("start index", i0 != j0), ("recorded index base", base != base_r),
            ("length", n != m), ("elements", z3.And(z3.ULT(t, n), body_at(f, t) != body_at(g, t)))]


def rewrite(matcher: Matcher, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
    """Both sides with every proved pair of folds replaced by a shared symbol (innermost pairs are all there
    is: a fold's body holds no fold in the terms the frontends build)."""
    for ours in applications(kernel, DECLS):
        for theirs in applications(reference, DECLS):
            if kind_of(ours) != kind_of(theirs) or applications(ours.arg(4), DECLS) or \
                    applications(theirs.arg(4), DECLS):
                continue
            t = z3.BitVec(f"argfold!{matcher.key}.{matcher.count}", 64)
            name = f"{kind_of(ours).name} fold {matcher.count}"
            if all(matcher._proved(f"{name}: {what}", formula) for what, formula in _premises(ours, theirs, t)):
                symbol = z3.BitVec(f"reduction!{matcher.key}.{matcher.count}", 64)
                matcher.count += 1
                matcher.steps.append(compose.Step(kernel, reference, None))
                kernel, reference = z3.substitute(kernel, (ours, symbol)), z3.substitute(reference, (theirs, symbol))
                return rewrite(matcher, kernel, reference)
            matcher.count += 1
    return kernel, reference
