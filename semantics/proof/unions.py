"""The kernel's rule about a reduction split into tiled parts: a block's partial sums or maxima, a tree of them,
the unrolled lanes of a loop, each part possibly one template at the points of a box of threads or registers.

`tiled_union` states the theorem the comprehension matcher relies on for its unions and folds, with the
arithmetic of the tiling done here on concrete numbers: every bound is a numeral under the hypothesis (a fixed
shape, a fixed storing thread), each element of a part is the reference's element at an index that moves
affinely, start + stride·(j - lo) + Σ slopeₖ·τₖ, and those progressions cover the reference's range (for Max and
Min) or cover it exactly once (for Sum). The box is a block's threads × register lanes, never a tensor's
elements; the range is not enumerated (residue classes modulo the strides' common multiple).
"""

from __future__ import annotations

import itertools

import z3

from lean_pool.checker import Checker
from semantics.comprehension import INDEX, MAX_FROM, MIN_FROM, SUM, body_at
from semantics.proof.rules import by_smt
from semantics.proof.theorem import Refused, Theorem, _mint, rule
from semantics.tiling import covers

MAX_POINTS = 1 << 14     # points of a part's box (threads × lanes of a block)

# (start, stride, slopes): a lane's image start + stride·(j - lo) + Σ slopeₖ·τₖ; None: the lane's every element
# is the reference's initial value (Max/Min only)
Image = tuple[int, int, tuple[int, ...]] | None
# (members, template, axes (variable, count), points (one per member), j, lo, hi, split, images (one per lane))
Part = tuple[tuple[z3.ExprRef, ...], z3.ExprRef, tuple[tuple[z3.BitVecRef, int], ...], tuple[tuple[int, ...], ...],
             z3.BitVecRef, int, int, bool, tuple[Image, ...]]


def _extremum_node(t: z3.ExprRef, greater: bool) -> bool:
    """If(a >= b, a, b) (max) or If(a <= b, a, b) (min) over reals: max(a, b) or min(a, b)."""
    if not (z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_arith(t)):
        return False
    c, a, b = t.children()
    return z3.is_app_of(c, z3.Z3_OP_GE if greater else z3.Z3_OP_LE) and c.arg(0).eq(a) and c.arg(1).eq(b)


def _leaves(t: z3.ExprRef, split, decl: z3.FuncDeclRef | None) -> tuple[list[z3.ExprRef], list[z3.ExprRef]]:
    """(comprehensions of `decl`, other leaves) of the tree `t` whose inner nodes `split` says are combining
    nodes; a comprehension's own initial value is walked as a subtree (Max/Min: max(w, F) = max({w} ∪ F))."""
    comprehensions, plain, todo = [], [], [t]
    while todo:
        u = todo.pop()
        if split(u):
            todo += [u.arg(2), u.arg(1)] if z3.is_app_of(u, z3.Z3_OP_ITE) else list(reversed(u.children()))
        elif decl is not None and z3.is_app(u) and u.decl().eq(decl):
            comprehensions.append(u)
            if decl.name() != SUM.name():
                todo.append(u.arg(0))
        else:
            plain.append(u)
    return comprehensions, plain


def _lanes(body: z3.ExprRef, is_sum: bool, greater: bool) -> list[z3.ExprRef]:
    """A body's lanes: its summands (Sum; numeral zeros add nothing) or the leaves of its max/min tree."""
    split = z3.is_add if is_sum else (lambda u: _extremum_node(u, greater))
    _, lanes = _leaves(body, split, None)
    return [u for u in lanes if not (is_sum and z3.is_rational_value(u) and u.as_fraction() == 0)]


@rule
def tiled_union(source: z3.ExprRef, kernel: z3.ExprRef, parts: tuple[Part, ...], bounds: tuple[int, int],
                checker: Checker, timeout_s: float, under: z3.BoolRef) -> Theorem:
    """⊢ under → C(v₀, lo, hi, f) = K for source a MaxFrom or MinFrom (C = Max, Min), where K is the kernel's term: a
    tree of max (min) nodes If(a ≥ b, a, b) (If(a ≤ b, a, b)) whose leaves (comprehensions of the source's kind,
    their initial values walked as subtrees, and any other term) are exactly the members of `parts`; or
    ⊢ under → Sum(lo, hi, f) = K for source a Sum, K the sum of the parts' members as listed. A part is members
    m_k, a template P over the box B = [0, n₁) × … of its axes (variables τ), each member's point p_k, a variable
    j, numerals lo_P ≤ hi_P, whether a body is split into lanes, and per lane its image (start, stride, slopes)
    or None. With bounds = (L, H)
    numerals, given (each under `under`, each an obligation):

    * range:  lo = L and hi = H;
    * fold:   every member m_k is P(p_k): a comprehension member has bounds lo_P, hi_P and body P(p_k)'s body at j
              (a plain member, P(p_k) itself; a part with no axes has the one member P); a member whose sides are
              structurally equal after z3.simplify (which rewrites a term to an equal one) needs no obligation;
    * into:   for τ ∈ B, j ∈ [lo_P, hi_P): each lane ℓ of P(τ)'s body at j (the body's summands, or the leaves of
              its max tree; the whole body unsplit) is f(φ_ℓ(τ, j)) for φ_ℓ = start + stride·(j - lo_P) +
              Σ slopeₖ·τₖ, or, where its image is None, v₀;

    and checked here on the numbers: the points are the box (each point once for Sum, every point for Max/Min);
    no image wraps; the images' progressions {φ_ℓ(τ, j) : j} over every point τ lie in [L, H) and cover it
    (each index once for Sum); for Max/Min, v₀ is one of the elements (some lane with image None has one).

    Proof (Max; Min alike): K's value is the max of its leaves' elements (max is associative, commutative and
    idempotent, and max(w, F) is the max of {w} ∪ F), which are the members' elements, which by fold are the
    lanes of P(τ) at j for every τ ∈ B, j ∈ [lo_P, hi_P). By into each is f(i) for an i ∈ [L, H) or v₀; by the
    cover every f(i), i ∈ [L, H), is one of them, and v₀ is: the two sets of values are equal, so are their
    maxima. (Sum) the exact cover makes (part, lane, τ, j) ↦ φ a bijection onto [L, H), each point standing for
    one member, so Σ members = Σ_{(ℓ, τ, j)} f(φ) = Σ_{i ∈ [L, H)} f(i): finite sums of reals commute and
    associate."""
    decl = source.decl() if z3.is_app(source) else None
    if decl is None or not any(decl.eq(d) for d in (SUM, MAX_FROM, MIN_FROM)):
        raise Refused(f"tiled_union: {source} is not a Sum, MaxFrom or MinFrom")
    is_sum, greater = decl.eq(SUM), decl.eq(MAX_FROM)
    lo, hi, f = source.children()[-3:]
    v0 = None if is_sum else source.arg(0)
    L, H = bounds
    members = [m for part in parts for m in part[0]]
    if is_sum:   # Σ of the members, as listed
        if not members or not kernel.eq(members[0] if len(members) == 1 else z3.Sum(members)):
            raise Refused("tiled_union: the kernel term is not the sum of the parts' members")
    else:
        comprehensions, plain = _leaves(kernel, lambda u: _extremum_node(u, greater), decl)
        if {t.get_id() for t in comprehensions + plain} != {m.get_id() for m in members}:
            raise Refused("tiled_union: the parts' members are not the kernel tree's leaves")
    conditions = {"range": z3.And(lo == L, hi == H)}
    progressions, init_seen = [], False
    for n, (ms, template, axes, points, j, p_lo, p_hi, splits, images) in enumerate(parts):
        vars_ = [v for v, _ in axes]
        box = list(itertools.product(*(range(c) for _, c in axes)))
        if len(box) > MAX_POINTS or len(ms) != len(points) or not 0 <= p_lo <= p_hi < 1 << 64 or \
                not (z3.is_const(j) and j.sort().eq(INDEX)) or any(not (z3.is_const(v) and v.sort().eq(INDEX))
                                                                  for v in vars_):
            raise Refused(f"tiled_union: part {n} is malformed")
        if (sorted(points) != box) if is_sum else (set(points) != set(box)):
            raise Refused(f"tiled_union: the points of part {n} are not its box")
        comprehension = z3.is_app(template) and template.decl().eq(decl)
        body = body_at(template.arg(template.num_args() - 1), j) if comprehension else template
        lanes = _lanes(body, is_sum, greater) if splits else [body]
        if len(lanes) != len(images):
            raise Refused(f"tiled_union: part {n} has {len(lanes)} lanes and {len(images)} images")
        at = [[(v, z3.BitVecVal(u, 64)) for v, u in zip(vars_, point, strict=True)] for point in points]
        if comprehension and not all(z3.is_app(m) and m.decl().eq(decl) for m in ms):
            raise Refused(f"tiled_union: a member of part {n} is not a {decl.name()}")
        bv = [z3.BitVecVal(b, 64) for b in (p_lo, p_hi)]
        sides = [((m.arg(m.num_args() - 3), bv[0]), (m.arg(m.num_args() - 2), bv[1]),
                  (body_at(m.arg(m.num_args() - 1), j), z3.substitute(body, *pairs))) if comprehension
                 else ((m, z3.substitute(template, *pairs)),) for m, pairs in zip(ms, at, strict=True)]
        differ = [z3.Or([a != b for a, b in eqs]) for eqs in sides
                  if not all(a.eq(b) or z3.simplify(a).eq(z3.simplify(b)) for a, b in eqs)]
        if differ:
            conditions[f"fold {n}"] = z3.Not(z3.Or(differ))
        inside = z3.And(*[z3.ULT(v, c) for v, c in axes], z3.ULE(p_lo, j), z3.ULT(j, p_hi))
        wrong = []
        for lane, image in zip(lanes, images, strict=True):
            if image is None:
                if is_sum:
                    raise Refused(f"tiled_union: a lane of part {n} has no image")
                wrong.append(lane != v0)
                init_seen |= p_lo < p_hi and bool(box)
                continue
            start, stride, slopes = image
            if len(slopes) != len(axes):
                raise Refused(f"tiled_union: an image of part {n} has {len(slopes)} slopes for {len(axes)} axes")
            phi = start + stride * (j - p_lo) + sum((d * v for d, v in zip(slopes, vars_, strict=True)),
                                                    z3.BitVecVal(0, 64))
            wrong.append(lane != body_at(f, phi))
            for point in box:
                offset = start + sum(d * u for d, u in zip(slopes, point, strict=True))
                last = offset + stride * (p_hi - p_lo - 1)
                if p_hi > p_lo and not (0 <= min(offset, last) and max(offset, last) < 1 << 64):
                    raise Refused(f"tiled_union: an image of part {n} wraps")
                progressions.append((offset, stride if p_hi - p_lo > 1 else 1, p_hi - p_lo))
        conditions[f"into {n}"] = z3.Not(z3.And(inside, z3.Or(wrong)))
    if not covers(progressions, L, H, exact=is_sum):
        raise Refused(f"tiled_union: the images do not cover [{L}, {H}){' exactly once' if is_sum else ''}")
    if not is_sum and not init_seen:
        raise Refused("tiled_union: the initial value is no kernel element")
    sides = [by_smt(z3.Implies(under, c), checker, timeout_s, f"tiled_union: {name}", "proof")
             for name, c in conditions.items()]
    return _mint(z3.Implies(under, source == kernel), "tiled_union", tuple(sides))

