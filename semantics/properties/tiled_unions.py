"""A union the matcher proved equal to one reference comprehension, restated by the kernel rule `tiled_union`:
a max tree over a block's partial maxima, a block's partial sums, folded templates over threads and register
lanes, unrolled trees — wherever every bound is a numeral under the store's hypothesis and each kernel lane reads
the reference at an affine index (the matcher's own progression cover, `reductions._progression_cover`).

The matcher's families, folds, reindexings φ and the numbers read off them are guesses here as they are there:
the rule's obligations and its arithmetic decide. When it refuses, the lane keeps its rewritten form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from lean_pool.canonical import structural_digest
from semantics.comprehension import SUM, is_comprehension
from semantics.proof import Refused, Theorem
from semantics.proof.rules import mp
from semantics.proof.unions import tiled_union
from semantics.properties import compose

if TYPE_CHECKING:
    from semantics.properties.reductions import Matcher
    from semantics.properties.unions import Union

COMPOSE_TIMEOUT_S = 10.0   # each side condition of the restatement: the union is proved already, this is extra


def union_equation(matcher: Matcher, union: Union, cr: z3.ExprRef, named: z3.ExprRef,
                   kernel: z3.ExprRef) -> Theorem | None:
    """For a max or min union, ⊢ h → cr = tree (`tiled_union` about the union's parts: the step replaced the tree
    by cr wherever it occurs, inside comprehension bodies too, which `substitute_under` undoes); for a sum,
    ⊢ h → named = kernel, `named` the kernel with the union read as cr: `tiled_union`, then an arithmetic step
    with the comprehensions as atoms (a coefficient, the other summands). None when the numbers cannot be read
    or a rule refuses."""
    from semantics.properties import reductions  # (the matcher imports this module)

    match = matcher.matched
    if match is None or match.sources is None:
        return None
    bounds = reductions._concrete_bounds(matcher, match.ref)
    if bounds is None:
        return None
    # the matcher's families are of copies of the union's terms with their bound variables renamed (`fold`):
    # each is found back by its structure
    originals = {structural_digest(p): p for p in union.parts}
    parts, lanes = [], iter(match.phis)
    for family, (template, fold) in zip(match.families, match.sources, strict=True):
        own = [next(lanes) for _ in family.lanes]
        part = _part(matcher, family, template, fold, own, bounds)
        members = [originals.get(structural_digest(m)) for m in part[0]] if part is not None else [None]
        if None in members:
            return None
        parts.append((tuple(members), *part[1:]))
    is_sum = cr.decl() == SUM
    members = [m for part in parts for m in part[0]]
    union_term = (members[0] if len(members) == 1 else z3.Sum(members)) if is_sum else union.term
    timeout_s = min(matcher.timeout_s, COMPOSE_TIMEOUT_S)

    def prove() -> Theorem:
        theorem = tiled_union(cr, union_term, tuple(parts), bounds, matcher.checker, timeout_s, matcher.hyp)
        if not is_sum:   # the union's tree was replaced by cr wherever it occurs (in bodies too): `substitute_under`
            return theorem
        claim = z3.Implies(theorem.conclusion, z3.Implies(matcher.hyp, named == kernel))
        step = compose.by_arithmetic(claim, matcher.checker, timeout_s,
                                     "equivalence: the kernel value reads its union as the reference's Sum")
        return mp(step, theorem)
    try:
        theorem = prove()
    except Refused as refused:
        if refused.obligation is not None:
            matcher.record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in theorem.evidence:
        matcher.record(ob, outcome)
    return theorem


def _part(matcher: Matcher, family, template: z3.ExprRef, fold, phis: list[z3.BitVecRef],
          bounds: tuple[int, int]) -> tuple | None:
    """The rule's part for one of the matcher's families: its members, template, box, bounds and per lane the
    image its φ seems to be (None for a lane outside the reference's range: a max's initial value)."""
    from semantics.properties import reductions

    own = reductions._concrete_bounds(matcher, family)
    if own is None:
        return None
    lo, hi = own
    points = list(fold.outer.points()) if fold else [()]
    images = []
    for phi in phis:
        numbers = reductions._progression_numbers(matcher, family, phi, lo)
        if numbers is None:
            return None
        start, stride, slopes = numbers
        ends = [start + sum(d * u for d, u in zip(slopes, p, strict=True)) for p in points]
        last = [e + stride * (hi - lo - 1) for e in ends]
        inside = all(bounds[0] <= min(a, b) and max(a, b) < bounds[1] for a, b in zip(ends, last, strict=True))
        images.append((start, stride, tuple(slopes)) if inside or hi <= lo else None)
    members = fold.members if fold else (template,)
    axes = tuple(zip(fold.outer.vars, fold.outer.counts, strict=True)) if fold else ()
    split = matcher.matched.split if is_comprehension(template) else False
    return (tuple(members), template, axes, tuple(fold.points) if fold else ((),), family.var, lo, hi, split,
            tuple(images))
