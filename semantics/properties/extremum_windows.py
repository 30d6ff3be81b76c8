"""Padded pooling windows of a running max (min): the reference's small MaxFrom unrolled to meet the kernel's chain.

A max pooling kernel with padding starts from -INFINITY and takes a tap only where it is inside the input:
`if (at >= 0 && at < L) acc = fmaxf(acc, in[at])`, unrolled over the window. Its value is a chain
`If(g₇, a₆, max(a₆, t₇))` over `a₆ = If(g₆, a₅, max(a₅, t₆))`, …, comprehension-free, while the reference is
`MaxFrom(x[first tap inside], lo, hi, λw. x[w's tap, or the first tap inside where w's is not])`: no matcher
reads the chain as a set of elements (each element is there only under its guard). When the kernel holds such a
conditional extremum and no comprehension, each reference MaxFrom (MinFrom) over a small constant window (at
most MAX_WINDOW terms, a window nested in it counted with it) is unrolled by the kernel's `unroll`
(⊢ h → MaxFrom(init, lo, hi, f) = max(init, f(lo), …, f(hi - 1))), outermost first. Both sides are then
comprehension-free and the lane's claim is one query over the taps. The window is a constant of the reference
(the pooling kernel size), never a tensor extent. Untrusted: the step's equation is the kernel's theorem.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import COMPREHENSIONS, MAX_FROM, MIN_FROM
from semantics.properties.compose import Step, unrolled_windows
from semantics.terms import reaching, subterms

EXTREMA = (MAX_FROM, MIN_FROM)
MAX_WINDOW = 64   # terms a constant-range reference MaxFrom (nested ones too) unrolls to: a pooling window


def conditional(term: z3.ExprRef) -> bool:
    """Whether `term` holds a real If on a comparison of reals (a max or min of two values, however the
    simplifier has folded it) and a real If on anything else (a tap's guard): taps taken under guards."""
    conditions = [_stripped(t.arg(0)) for t in subterms(term) if z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_real(t)]
    return any(map(_compares_reals, conditions)) and not all(map(_compares_reals, conditions))


def real_conditions(term: z3.ExprRef) -> list[z3.BoolRef]:
    """The distinct conditions, negations stripped, of the real Ifs in `term` that do not compare reals: the
    guards under which a conditional extremum takes its taps."""
    found = {}
    for t in subterms(term):
        if z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_real(t) and not _compares_reals(_stripped(t.arg(0))):
            found.setdefault(_stripped(t.arg(0)).get_id(), _stripped(t.arg(0)))
    return list(found.values())


def _stripped(condition: z3.BoolRef) -> z3.BoolRef:
    return condition.arg(0) if z3.is_not(condition) else condition


def _compares_reals(condition: z3.BoolRef) -> bool:
    return any(z3.is_app_of(condition, k) for k in (z3.Z3_OP_GE, z3.Z3_OP_LE, z3.Z3_OP_GT, z3.Z3_OP_LT)) and \
        z3.is_real(condition.arg(0))


def rewrite(kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker,
            timeout_s: float, record) -> tuple[z3.ExprRef, list[Step]]:
    """The reference with its small constant-range extrema unrolled, when the kernel is a comprehension-free
    conditional extremum; with the steps that undo it (each the kernel's `unroll` equation)."""
    if reaching(kernel, COMPREHENSIONS) or not conditional(kernel):
        return reference, []
    return unrolled_windows(kernel, reference, EXTREMA, _taps, hypothesis, checker, timeout_s, record)


def _taps(term: z3.ExprRef) -> int | None:
    """The terms a MaxFrom (MinFrom) with constant bounds unrolls to, its inner ones unrolled too, when at most
    MAX_WINDOW; None for a symbolic bound (a tensor extent), another comprehension inside, or too many terms."""
    lo, hi = term.arg(1), term.arg(2)
    if not (z3.is_bv_value(lo) and z3.is_bv_value(hi)):
        return None
    inside = [term.arg(0), term.arg(3).body() if z3.is_quantifier(term.arg(3)) else term.arg(3)]
    inner = [_taps(t) for part in inside for t in subterms(part) if z3.is_app(t) and t.decl() in EXTREMA]
    others = tuple(c for c in COMPREHENSIONS if c not in EXTREMA)
    if any(n is None for n in inner) or any(reaching(part, others) for part in inside):
        return None
    count = (hi.as_long() - lo.as_long() + 1) * max(inner, default=1)
    return count if 0 < count <= MAX_WINDOW else None
