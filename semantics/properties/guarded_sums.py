"""Conditional accumulations written as sums of guarded terms, so an unrolled window meets the reference's Sum.

A pooling or convolution window with padding accumulates only where the tap is inside the input:
`if (at >= 0 && at < L) acc += in[at]`, unrolled over the window. The kernel's value is then a chain
`If(g₇, a₆, a₆ + t₇)` over `a₆ = If(g₆, a₅, a₅ + t₆)`, …, which no matcher reads as a reduction, while the
reference is `Sum(0, K, λw. If(inside(w), x[…], 0))`. Moving each guard onto its own summand,

    If(g, a, a + t₁ + … + tₙ) = a + If(g, 0, t₁) + … + If(g, 0, tₙ)     (and with the branches swapped)

(an identity of reals: both sides are a when g picks a, a + Σt otherwise; n > 1 where a whole inner window
sits under an outer tap test), turns the chain into the flat sum
of K guarded summands that `semantics.properties.unions.unrolled` finds and the matcher pairs with the
reference's Sum. The rewrite is a tactic step: its equation ⊢ h → new = old is proved by `by_smt` with the
guards and reads as atoms (then `instantiate`d back), so `compose.close` undoes it by kernel
rules and the lane still reaches its top goal.

When the kernel had such a chain and holds no comprehension at all, and the reference's Sum runs over a small
constant window (at most MAX_WINDOW terms, nested windows counted together: a pooling or convolution tap
loop), the Sum is unrolled instead, by the kernel's `unroll` (⊢ h → Sum(lo, hi, f) = f(lo) + … + f(hi - 1)):
both sides are then sums of guarded terms, compared tap by tap (`guarded_reads`) with no index map to line up.
The window is a constant of the reference (the pooling kernel size, the filter width), never a tensor extent.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import COMPREHENSIONS, SUM
from semantics.proof import Refused, Theorem
from semantics.properties import extremum_windows, guarded_reads, guarded_trees
from semantics.properties.compose import Step, by_atoms, unrolled_windows
from semantics.properties.guarded_trees import atoms as _atoms
from semantics.properties.unions import summands
from semantics.terms import outside_binders, reaching, subterms

ZERO = z3.RealVal(0)
MAX_WINDOW = 128  # terms a constant-range reference Sum (nested ones too) unrolls to against a comprehension-free
                 # kernel value: a pooling or convolution window, never a tensor extent


def _split_off(longer: z3.ExprRef, shorter: z3.ExprRef) -> z3.ExprRef | None:
    """The sum t of what `longer` adds to `shorter` when the summands of `longer` are those of `shorter` and
    at least one more (as multisets, + being associative and commutative), else None."""
    if not (z3.is_add(longer) and z3.is_real(longer)):
        return None
    rest = summands(longer)
    for part in summands(shorter):
        at = next((i for i, p in enumerate(rest) if p.eq(part)), None)
        if at is None:
            return None
        del rest[at]
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else z3.Sum(*rest)


def _pull(term: z3.ExprRef, memo: dict[int, z3.ExprRef]) -> z3.ExprRef:
    """`term` with every If(g, a, a + t) / If(g, a + t, a) over reals, bottom up, written a + If(g, 0, t) /
    a + If(g, t, 0)."""
    key = term.get_id()
    if key in memo:
        return memo[key]
    if z3.is_quantifier(term) or not z3.is_app(term) or term.num_args() == 0:
        memo[key] = term
        return term
    children = [_pull(c, memo) for c in term.children()]
    out = term.decl()(*children) if any(not c.eq(o) for c, o in zip(children, term.children(), strict=True)) else term
    if z3.is_app_of(out, z3.Z3_OP_ITE) and z3.is_real(out):
        guard, then, other = out.children()
        rest = _split_off(other, then)
        if rest is not None:
            out = z3.Sum(then, *(z3.If(guard, ZERO, r) for r in summands(rest)))
        else:
            rest = _split_off(then, other)
            if rest is not None:
                out = z3.Sum(other, *(z3.If(guard, r, ZERO) for r in summands(rest)))
    memo[key] = out
    return out


def rewrite(kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker,
            timeout_s: float, record) -> tuple[z3.ExprRef, z3.ExprRef, list[Step]]:
    """The pair with the kernel's conditional accumulations as guarded summands and, when the kernel then
    reads no comprehension, the reference's small constant-range Sums unrolled (its extrema too, against a
    conditional running max: `extremum_windows`); with the steps that undo it."""
    reference, steps = extremum_windows.rewrite(kernel, reference, hypothesis, checker, timeout_s, record)
    kernel, trees = guarded_trees.rewrite(kernel, reference, hypothesis, checker, timeout_s, record)
    steps += trees
    pulled, equation = _pulled(kernel, hypothesis, checker, timeout_s, record)
    if equation is None:   # no conditional accumulation: a window the compiler proved inside, or the matcher's case
        if not plain_window(kernel, reference):
            return kernel, reference, steps
        reference, unrolled = unrolled_reference(kernel, reference, hypothesis, checker, timeout_s, record)
        return kernel, reference, steps + unrolled
    steps.append(Step(kernel, reference, equation))
    kernel = pulled
    if reaching(kernel, COMPREHENSIONS):
        return kernel, reference, steps
    reference, unrolled = unrolled_reference(kernel, reference, hypothesis, checker, timeout_s, record)
    return kernel, reference, steps + unrolled


def unrolled_reference(kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker,
                       timeout_s: float, record) -> tuple[z3.ExprRef, list[Step]]:
    """The reference with its small constant-range Sums unrolled (`window_terms`), with the steps that undo it."""
    return unrolled_windows(kernel, reference, (SUM,), window_terms, hypothesis, checker, timeout_s, record)


def plain_window(kernel: z3.ExprRef, reference: z3.ExprRef) -> bool:
    """Whether the kernel is a whole window of unguarded reads (nvcc unrolled the taps and proved each inside:
    an average pooling without padding) against one small constant reference window with as many taps: at
    least `guarded_reads.PLAIN_READS` of them (the lane that tactic then takes), where the matcher's folding of
    the reads into families is the weaker way (an 11 × 11 window folded as 9 + 110 + 2 terms); both are then
    compared read by read."""
    if reaching(kernel, COMPREHENSIONS):
        return False
    windows = outside_binders(reference, (SUM,))
    counts = [window_terms(t) for t in windows]
    if len(windows) != 1 or counts[0] is None or counts[0] < guarded_reads.PLAIN_READS:
        return False
    reads = guarded_reads.reads(kernel)
    return len(reads) == counts[0] and all(z3.is_true(taken) for taken, _ in reads)


def window_terms(term: z3.ExprRef) -> int | None:
    """The terms a Sum with constant bounds unrolls to, its inner constant Sums unrolled too, when at most
    MAX_WINDOW; None for a Sum with a symbolic bound (a tensor extent) or an inner one, or too many terms."""
    lo, hi = term.arg(0), term.arg(1)
    if not (z3.is_bv_value(lo) and z3.is_bv_value(hi)):
        return None
    inner = [window_terms(t) for t in subterms(term.arg(2).body()) if z3.is_app(t) and t.decl().eq(SUM)]
    if any(n is None for n in inner) or reaching(term.arg(2).body(), tuple(c for c in COMPREHENSIONS
                                                                           if not c.eq(SUM))):
        return None
    count = (hi.as_long() - lo.as_long()) * max(inner, default=1)
    return count if 0 < count <= MAX_WINDOW else None


def _pulled(term: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker, timeout_s: float,
            record) -> tuple[z3.ExprRef, Theorem | None]:
    """(`term` with its conditional accumulations as guarded summands, ⊢ h → new = term), or (term, None) when
    nothing changed or the equation was not proved (the lane then goes on with its own term)."""
    new = _pull(term, {})
    if new.eq(term):
        return term, None
    claim = z3.Implies(hypothesis, new == term)
    try:
        theorem = by_atoms(claim, _atoms([new, term]), checker, timeout_s,
                           "equivalence: a conditional accumulation is a sum of guarded terms")
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return term, None
    record(*theorem.evidence[0])
    return new, theorem
