"""A pair of Sums the matcher proved equal, as a kernel theorem: `reindex_sum` by the matcher's reindexing φ and a
preimage ψ, so the lane that named the pair by a symbol can be closed through kernel rules (`compose.close`).

The matcher proves its pairs by obligations of its own (every kernel term is a reference element, inside the
reference's range, every reference element is hit, and the two sums have as many terms: a surjection between
finite sets of one size). Restated here: one kernel Sum whose body is c lanes (an unrolled loop) against one
reference Sum, the bijection (lane, j) ↦ φ_lane(j) named by the match and its preimages ψ read off φ when it moves by a
constant, else the prover's preimage hints (guesses either way: the obligations of `reindex_lanes` decide). A
union of families, a folded family, a max or a min has no kernel rule yet; its lane stays rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import z3

from semantics.comprehension import SUM
from semantics.proof import Refused, Theorem
from semantics.proof.rules import sym
from semantics.proof.sums import reindex_lanes

if TYPE_CHECKING:
    from semantics.properties.reductions import Family, Matcher

COMPOSE_TIMEOUT_S = 10.0   # each side condition of the restatement: the pair is proved already, this is extra


@dataclass(frozen=True)
class Match:
    """The pairing `Matcher._union_equal` proved: the kernel's families, the reference's, and per kernel lane
    (in family order) its reindexing φ into the reference and the proposed preimage ψ (or None)."""

    families: list[Family]
    ref: Family
    phis: tuple[z3.BitVecRef, ...]
    psis: tuple[z3.BitVecRef | None, ...]


def equation(matcher: Matcher, ck: z3.ExprRef, cr: z3.ExprRef) -> Theorem | None:
    """⊢ h → ck = cr for the kernel Sum ck the matcher just paired with the reference's Sum cr (h the matcher's
    hypothesis), by `reindex_lanes`; None when the pairing is not one unfolded family or a side condition is
    not proved (each obligation asked is recorded)."""
    match = matcher.matched
    if match is None or ck.decl() != SUM or cr.decl() != SUM or len(match.families) != 1:
        return None
    family = match.families[0]
    if family.kind != "sum" or family.outer is not None:
        return None
    guessed = [inverse(phi, family.var, match.ref.var) for phi in match.phis]   # exact for affine maps
    psis = [psi if guess is None else guess for guess, psi in zip(guessed, match.psis, strict=True)]
    if None in psis:
        return None
    try:
        lanes = tuple((family.var, lane, phi) for lane, phi in zip(family.lanes, match.phis, strict=True))
        theorem = reindex_lanes(cr, ck, lanes, tuple((match.ref.var, psi) for psi in psis), matcher.checker,
                                min(matcher.timeout_s, COMPOSE_TIMEOUT_S), under=matcher.hyp)
    except Refused as refused:
        if refused.obligation is not None:
            matcher.record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in theorem.evidence:
        matcher.record(ob, outcome)
    return sym(theorem)


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
