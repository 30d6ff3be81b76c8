"""A pair of Sums the matcher proved equal, as a kernel theorem: `reindex_lanes` by the matcher's reindexing φ and a
preimage ψ, so the lane that named the pair by a symbol can be closed through kernel rules (`compose.close`).

The matcher proves its pairs by obligations of its own (every kernel term is a reference element, inside the
reference's range, every reference element is hit, and the two sums have as many terms: a surjection between
finite sets of one size). Restated here: one kernel Sum whose body is c lanes (an unrolled loop) against one
reference Sum, the bijection (lane, j) ↦ φ_lane(j) named by the match and its preimages ψ read off φ when it moves by a
constant, else the prover's preimage hints (guesses either way: the obligations of `reindex_lanes` decide). A
pair of MaxFroms (MinFroms) the same, with their inits equal. Unions and folds: `tiled_unions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import z3

from lean_pool.checker import Checker
from semantics.comprehension import MAX_FROM, MIN_FROM, PROD, SUM, body_at
from semantics.proof import Refused, Theorem
from semantics.proof.rules import mp, sym
from semantics.proof.sums import reindex_lanes, reindex_union
from semantics.properties import compose
from semantics.terms import outside_binders

if TYPE_CHECKING:
    from semantics.properties.reductions import Family, Matcher

# the comprehensions `equation` restates, with the kind of the matcher's family for each
PAIRED = {SUM: "sum", MAX_FROM: "max", MIN_FROM: "min"}
COMPOSE_TIMEOUT_S = 10.0   # each side condition of the restatement: the pair is proved already, this is extra
Map = tuple[z3.BitVecRef, z3.BitVecRef]   # (variable, term in it): an index map j ↦ term


def reindex_sum(source: z3.ExprRef, target: z3.ExprRef, phi: Map, psi: Map, checker: Checker, timeout_s: float,
                under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → source = target for two Sums (or two Prods) by the bijection φ from the target's range onto the
    source's, ψ its proposed preimage: the kernel's `reindex_lanes` with one lane, the target's whole body
    (whose lanes obligation the rule then skips), so the theorem is made and recorded by that rule."""
    if not (z3.is_app(target) and target.decl() in (SUM, PROD)):
        raise Refused(f"reindex_sum: {target} is not a Sum or a Prod")
    var = phi[0]
    return reindex_lanes(source, target, ((var, body_at(target.arg(2), var), phi[1]),), (psi,), checker, timeout_s,
                         under)


@dataclass(frozen=True)
class Match:
    """The pairing `Matcher._union_equal` proved: the kernel's families, the reference's, and per kernel lane
    (in family order) its reindexing φ into the reference and the proposed preimage ψ (or None)."""

    families: list[Family]
    ref: Family
    phis: tuple[z3.BitVecRef, ...]
    psis: tuple[z3.BitVecRef | None, ...]
    terms: tuple[z3.ExprRef, ...] | None = None   # the kernel term of each family, when none is folded
    # per family, the kernel term it opens or a fold's template, with the fold (None: one kernel term), and
    # whether comprehension bodies were split into lanes (`semantics.properties.tiled_unions`)
    sources: tuple[tuple[z3.ExprRef, object], ...] | None = None
    split: bool = True


def equation(matcher: Matcher, ck: z3.ExprRef, cr: z3.ExprRef) -> Theorem | None:
    """⊢ h → ck = cr for the kernel Sum (MaxFrom, MinFrom) ck the matcher just paired with the reference's cr of
    the same kind (h the matcher's hypothesis), by `reindex_lanes`; None when the pairing is not one unfolded
    family or a side condition is not proved (each obligation asked is recorded)."""
    match = matcher.matched
    if match is None or ck.decl() not in PAIRED or cr.decl() != ck.decl() or len(match.families) != 1:
        return None
    family = match.families[0]
    if family.kind != PAIRED[ck.decl()] or family.outer is not None:
        return None
    lanes, psis = _lanes(family, match.phis, match.psis, match.ref.var)
    if None in psis:
        return None
    return _recorded(matcher, lambda: sym(reindex_lanes(cr, ck, lanes, psis, matcher.checker,
                                                        min(matcher.timeout_s, COMPOSE_TIMEOUT_S),
                                                        under=matcher.hyp)))


def union_equation(matcher: Matcher, union: list[z3.ExprRef], cr: z3.ExprRef, named: z3.ExprRef,
                   kernel: z3.ExprRef) -> Theorem | None:
    """⊢ h → named = kernel, where the matcher just proved the union of the kernel's Sums `union` (one family
    each, none folded) equal to the reference's Sum cr and `named` is the kernel with the union read as cr: the
    union's theorem by `reindex_union`, then a `compose.by_arithmetic`/`mp` step (the union's coefficient, the
    other summands); None when a rule refuses. (The matcher's families are of copies of the parts with their
    bound variables renamed; each is found back by its bounds and its body, which names no binder.)"""
    match = matcher.matched
    if match is None or match.terms is None or cr.decl() != SUM or \
            any(f.kind != "sum" or f.outer is not None for f in match.families):
        return None
    top = {t.get_id() for t in outside_binders(kernel, (SUM,))}
    if any(p.get_id() not in top for p in union):   # read inside a comprehension's body: no atom can name it
        return None
    originals = {_shape(p): p for p in union if z3.is_app(p) and p.decl() == SUM}
    parts, start = [], 0
    for term, family in zip(match.terms, match.families, strict=True):
        count = len(family.lanes)
        lanes, psis = _lanes(family, match.phis[start:start + count], match.psis[start:start + count],
                             match.ref.var)
        start += count
        if None in psis or not (z3.is_app(term) and term.decl() == SUM) or _shape(term) not in originals:
            return None
        parts.append((originals[_shape(term)], lanes, psis))
    timeout_s = min(matcher.timeout_s, COMPOSE_TIMEOUT_S)

    def prove() -> Theorem:
        union = reindex_union(cr, tuple(parts), matcher.checker, timeout_s, under=matcher.hyp)
        step = compose.by_arithmetic(z3.Implies(union.conclusion, z3.Implies(matcher.hyp, named == kernel)),
                                     matcher.checker, timeout_s,
                                     "equivalence: the kernel value reads its union as the reference's Sum")
        return mp(step, union)
    return _recorded(matcher, prove)


def _shape(term: z3.ExprRef) -> tuple[int, int, int]:
    """A Sum up to the names of its bound variable: its bounds and its lambda's body (de Bruijn indexed)."""
    body = term.arg(2)
    return term.arg(0).get_id(), term.arg(1).get_id(), (body.body() if z3.is_quantifier(body) else body).get_id()


def _lanes(family: Family, phis, psis, target: z3.BitVecRef) -> tuple[tuple, tuple]:
    """The family's lanes (var, t, φ) and their preimages (a preimage read off an affine φ first, else the
    prover's hint; None where neither is known)."""
    lanes = tuple((family.var, lane, phi) for lane, phi in zip(family.lanes, phis, strict=True))
    guessed = [inverse(phi, family.var, target) for phi in phis]   # exact for affine maps
    chosen = [psi if guess is None else guess for guess, psi in zip(guessed, psis, strict=True)]
    return lanes, tuple(None if psi is None else (target, psi) for psi in chosen)


def _recorded(matcher: Matcher, prove) -> Theorem | None:
    """The theorem `prove` makes, its obligations recorded; None (the refused obligation recorded) if a rule
    refuses."""
    try:
        theorem = prove()
    except Refused as refused:
        if refused.obligation is not None:
            matcher.record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in theorem.evidence:
        matcher.record(ob, outcome)
    return theorem


def inverse(phi: z3.BitVecRef, var: z3.BitVecRef, target: z3.BitVecRef) -> z3.BitVecRef | None:
    """ψ(target) = (target - φ(0)) / s when φ seems to move by a constant s > 0 per step of var, φ(0) - target
    when by -1 (read off two points, not proved); None otherwise."""
    def at(n: int) -> z3.BitVecRef:
        return z3.simplify(z3.substitute(phi, (var, z3.BitVecVal(n, 64))))
    step = z3.simplify(at(1) - at(0))
    if not z3.is_bv_value(step) or step.as_long() == 0:
        return None
    if step.as_long() == (1 << 64) - 1:
        return at(0) - target
    return target - at(0) if step.as_long() == 1 else z3.UDiv(target - at(0), step)
