"""The kernel's rules about comprehensions (`semantics.comprehension`): reindexing (one lane or several per
index; `reindex_lanes` also of a `MaxFrom` or a `MinFrom`), splitting and unrolling a `Sum` or a `Prod`. Each
Sum rule holds of Prod with · for + (and 1 for 0): only commutativity and associativity are used.

Bounds are 64-bit unsigned indices and a body is a z3 array from an index to a real (a lambda, read at an
index by beta reduction, `comprehension.body_at`); Σ over [lo, hi) is empty when hi ≤ lo. A rule may hold
only under a condition `under` (the hypothesis that a store happens: the bounds of a kernel's loop are
symbolic); its conclusion is then `under → lhs = rhs`, and each side
condition is an obligation `under ∧ ¬condition` that must be unsat. Side conditions are discharged by
`rules.by_smt`, so a refused one raises `Refused` with the solver's outcome.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import EXTREMA, INDEX, MAX_FROM, MIN_FROM, MONOIDS, PROD, SUM, Monoid, body_at
from semantics.proof.rules import by_smt
from semantics.proof.theorem import Refused, Theorem, _mint, rule
from semantics.terms import mentions

Map = tuple[z3.BitVecRef, z3.BitVecRef]   # (variable, term in it): an index map j ↦ term
Lane = tuple[z3.BitVecRef, z3.ArithRef, z3.BitVecRef]   # (variable j, a term t(j), its index map φ(j))
Part = tuple[z3.ExprRef, tuple[Lane, ...], tuple[Map, ...]]   # (a comprehension, its lanes, their preimages)


def _comprehension(term: z3.ExprRef, rule: str) -> tuple[Monoid, z3.BitVecRef, z3.BitVecRef, z3.ArrayRef]:
    """(its monoid, lo, hi, body) of a Sum or a Prod, else `Refused`."""
    if not (z3.is_app(term) and any(term.decl().eq(d) for d in (SUM, PROD))):
        raise Refused(f"{rule}: {term} is not a Sum or a Prod")
    return MONOIDS[term.decl().name()], term.arg(0), term.arg(1), term.arg(2)


def _reduction(term: z3.ExprRef, rule: str) -> tuple[Monoid, z3.ArithRef | None, z3.BitVecRef, z3.BitVecRef,
                                                      z3.ArrayRef]:
    """(its monoid, init, lo, hi, body) of a Sum or a Prod (init None) or a MaxFrom or a MinFrom, else `Refused`."""
    if z3.is_app(term) and any(term.decl().eq(d) for d in (MAX_FROM, MIN_FROM)):
        return EXTREMA[term.decl().name()], term.arg(0), term.arg(1), term.arg(2), term.arg(3)
    op, lo, hi, body = _comprehension(term, rule)
    return op, None, lo, hi, body


def _inside(i: z3.BitVecRef, lo: z3.BitVecRef, hi: z3.BitVecRef) -> z3.BoolRef:
    return z3.And(z3.ULE(lo, i), z3.ULT(i, hi))


def _apply(m: Map, at: z3.BitVecRef) -> z3.BitVecRef:
    var, term = m
    if not (z3.is_const(var) and var.sort().eq(INDEX) and term.sort().eq(INDEX)):
        raise Refused(f"an index map must be a 64-bit variable and a 64-bit term, not {var} ↦ {term}")
    return z3.substitute(term, (var, at))


def _conditional(under: z3.BoolRef, equation: z3.BoolRef) -> z3.BoolRef:
    return equation if z3.is_true(under) else z3.Implies(under, equation)


def _side(name: str, condition: z3.BoolRef, under: z3.BoolRef, checker: Checker, timeout_s: float) -> Theorem:
    """⊢ under → condition, or `Refused` (the obligation purified: index divisions named, `by_smt`)."""
    return by_smt(_conditional(under, condition), checker, timeout_s, name, "proof", purify=True)


@rule
def reindex_lanes(source: z3.ExprRef, target: z3.ExprRef, lanes: tuple[Lane, ...], psis: tuple[Map, ...],
                  checker: Checker, timeout_s: float, under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → Σ_{i∈[lo,hi)} f(i) = Σ_{j∈[lo',hi')} g(j), for source = Sum(lo, hi, f), target =
    Sum(lo', hi', g) and c ≥ 1 lanes (t_l, φ_l) (an unrolled loop: each iteration j adds c terms t_l(j)),
    given (each under `under`, each an obligation):

    * into:      j ∈ [lo',hi') → φ_l(j) ∈ [lo,hi), for every l
    * injective: j, k ∈ [lo',hi') → (φ_l(j) = φ_l(k) → j = k) for every l, and φ_l(j) ≠ φ_m(k) for l < m
    * onto:      i ∈ [lo,hi) → ∨_l (ψ_l(i) ∈ [lo',hi') ∧ φ_l(ψ_l(i)) = i)   (the ψ_l name preimages)
    * lanes:     j ∈ [lo',hi') → g(j) = t_1(j) + … + t_c(j)
    * body l:    j ∈ [lo',hi') → t_l(j) = f(φ_l(j)), for every l

    Then (l, j) ↦ φ_l(j) is a bijection [1,c] × [lo',hi') → [lo,hi), and
    Σ_j g(j) = Σ_j Σ_l f(φ_l(j)) = Σ_{(l,j)} f(φ_l(j)) = Σ_i f(i): finite sums of reals do not depend on the
    order or grouping of their terms. Lanes, maps and preimages are hints (untrusted); only the obligations
    decide. (One obligation per lane's body: their sum in one query is much harder for the solver.) For two
    Prods the same with Π and ·: finite products of reals commute and associate too. For two MaxFroms
    (MinFroms), MaxFrom(init, lo, hi, f) = max({init} ∪ {f(i) : i ∈ [lo,hi)}), the same with max for + in
    `lanes` and one more obligation, init: init = init' (under `under`): the bijection makes the two sets
    of values one set, and max (min) of a finite set of reals does not depend on order or grouping (nor on
    repetition: injectivity is asked all the same). An empty [lo',hi') makes [lo,hi) empty by onto: both
    sides are then their equal inits."""
    under = z3.BoolVal(True) if under is None else under
    op, init, lo, hi, f = _reduction(source, "reindex_lanes")
    op2, init2, lo2, hi2, g = _reduction(target, "reindex_lanes")
    if not source.decl().eq(target.decl()):
        raise Refused(f"reindex_lanes: a {op.name} and a {op2.name}")
    if not lanes or len(lanes) != len(psis):
        raise Refused(f"reindex_lanes: {len(lanes)} lanes and {len(psis)} preimages ψ")
    phis = [(var, phi) for var, _, phi in lanes]
    j, k, i = (z3.FreshConst(INDEX, n) for n in ("j", "k", "i"))
    at_j, at_k = [_apply(p, j) for p in phis], [_apply(p, k) for p in phis]
    terms = [z3.substitute(term, (var, j)) for var, term, _ in lanes]
    apart = [z3.Implies(at_j[a] == at_k[a], j == k) for a in range(len(phis))]
    apart += [at_j[a] != at_k[b] for a in range(len(phis)) for b in range(a + 1, len(phis))]
    preimages = [_apply(p, i) for p in psis]

    def every_j(condition: z3.BoolRef) -> z3.BoolRef:
        return z3.ForAll([j], z3.Implies(_inside(j, lo2, hi2), condition))
    conditions = {
        "into": every_j(z3.And([_inside(t, lo, hi) for t in at_j])),
        "injective": z3.ForAll([j, k], z3.Implies(z3.And(_inside(j, lo2, hi2), _inside(k, lo2, hi2)),
                                                  z3.And(apart))),
        "onto": z3.ForAll([i], z3.Implies(_inside(i, lo, hi), z3.Or([
            z3.And(_inside(t, lo2, hi2), _apply(p, t) == i) for p, t in zip(phis, preimages, strict=True)]))),
    }
    if not (len(lanes) == 1 and terms[0].eq(body_at(g, j))):
        conditions["lanes"] = every_j(body_at(g, j) == op.of(terms))
    conditions |= {f"body {n}": every_j(t == body_at(f, at))
                   for n, (t, at) in enumerate(zip(terms, at_j, strict=True))}
    if init is not None:
        conditions["init"] = init == init2
    sides = [_side(f"reindex_lanes: {name}", c, under, checker, timeout_s) for name, c in conditions.items()]
    return _mint(_conditional(under, source == target), "reindex_lanes", tuple(sides))


@rule
def reindex_union(source: z3.ExprRef, parts: tuple[Part, ...], checker: Checker, timeout_s: float,
                  under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → C(lo, hi, f) = P_1 ⊕ … ⊕ P_n, for source = C(lo, hi, f) and parts P_p = C(lo_p, hi_p, g_p) of
    the same kind (a reduction split over loops, threads or registers), each with lanes (t, φ) and preimages ψ
    as in `reindex_lanes`, given (each under `under`, each an obligation):

    * into p:    j ∈ [lo_p,hi_p) → φ(j) ∈ [lo,hi), for every lane of part p
    * onto:      i ∈ [lo,hi) → ∨ over every lane of every part (ψ(i) ∈ [lo_p,hi_p) ∧ φ(ψ(i)) = i)
    * count:     lo ≤ hi, every lo_p ≤ hi_p, and Σ_p c_p·(hi_p - lo_p) = hi - lo on exact (128-bit)
                 integers, c_p the number of part p's lanes
    * lanes p:   j ∈ [lo_p,hi_p) → g_p(j) = ⊕ of part p's lanes at j (skipped for one lane that is g_p itself)
    * body p.l:  j ∈ [lo_p,hi_p) → t(j) = f(φ(j)), for every lane

    Then (p, l, j) ↦ φ_{p,l}(j) maps a finite set of hi - lo elements onto [lo, hi), which has as many, so it
    is a bijection (a surjection between finite sets of one size), and
    P_1 ⊕ … ⊕ P_n = ⊕_p ⊕_j ⊕_l f(φ_{p,l}(j)) = ⊕_i f(i) (finite sums and products of reals commute and
    associate). The counting condition takes the place of injectivity: one obligation, not one per pair of
    lanes. Lanes, maps and preimages are hints (untrusted); only the obligations decide."""
    under = z3.BoolVal(True) if under is None else under
    op, lo, hi, f = _comprehension(source, "reindex_union")
    if not parts:
        raise Refused("reindex_union: no parts")
    i = z3.FreshConst(INDEX, "i")
    conditions: dict[str, z3.BoolRef] = {}
    hits, sizes, ordered = [], [], [z3.ULE(lo, hi)]
    for n, (term, lanes, psis) in enumerate(parts):
        _, lo2, hi2, g = _comprehension(term, "reindex_union")
        if not term.decl().eq(source.decl()) or not lanes or len(lanes) != len(psis):
            raise Refused(f"reindex_union: part {n} is not a comprehension of the source's kind with its lanes")
        j = z3.FreshConst(INDEX, "j")
        at_j = [_apply((var, phi), j) for var, _, phi in lanes]
        terms = [z3.substitute(t, (var, j)) for var, t, _ in lanes]

        def every_j(condition: z3.BoolRef, j=j, lo2=lo2, hi2=hi2) -> z3.BoolRef:
            return z3.ForAll([j], z3.Implies(_inside(j, lo2, hi2), condition))
        conditions[f"into {n}"] = every_j(z3.And([_inside(t, lo, hi) for t in at_j]))
        if not (len(lanes) == 1 and terms[0].eq(body_at(g, j))):
            conditions[f"lanes {n}"] = every_j(body_at(g, j) == op.of(terms))
        conditions |= {f"body {n}.{m}": every_j(t == body_at(f, at))
                       for m, (t, at) in enumerate(zip(terms, at_j, strict=True))}
        for (var, _, phi), psi in zip(lanes, psis, strict=True):
            back = _apply(psi, i)
            hits.append(z3.And(_inside(back, lo2, hi2), _apply((var, phi), back) == i))
        sizes.append(len(lanes) * (z3.ZeroExt(64, hi2) - z3.ZeroExt(64, lo2)))
        ordered.append(z3.ULE(lo2, hi2))
    conditions["onto"] = z3.ForAll([i], z3.Implies(_inside(i, lo, hi), z3.Or(hits)))
    conditions["count"] = z3.And(*ordered, z3.Sum(sizes) == z3.ZeroExt(64, hi) - z3.ZeroExt(64, lo))
    sides = [_side(f"reindex_union: {name}", c, under, checker, timeout_s) for name, c in conditions.items()]
    whole = op.of([term for term, _, _ in parts]) if len(parts) > 1 else parts[0][0]
    return _mint(_conditional(under, source == whole), "reindex_union", tuple(sides))


@rule
def reindex_by(source: z3.ExprRef, target: z3.ExprRef, phi: Map, psi: Map, body: Theorem, v: z3.BitVecRef,
               checker: Checker, timeout_s: float, under: z3.BoolRef) -> Theorem:
    """Γ ⊢ under → C(lo, hi, f) = C(lo', hi', g), for source = C(lo, hi, f) and target = C(lo', hi', g) of one
    kind (Sum or Prod), given the obligations into, injective and onto of `reindex_lanes` with one lane and, in
    place of its body obligation, the premise Γ ⊢ ¬((under ∧ lo' ≤ v ∧ v < hi') ∧ g(v) ≠ f(φ(v))) about a free
    symbol v that occurs nowhere else (not in under, the comprehensions, φ's image of anything but v, or Γ).

    A free symbol is universally quantified, so the premise is ∀v. under ∧ v ∈ [lo',hi') → g(v) = f(φ(v)),
    which is under → body (under does not mention v): the body condition, proved by a theorem instead of one
    obligation (an inner comparison of comprehensions the solver alone cannot decide, closed by rules)."""
    op, lo, hi, f = _comprehension(source, "reindex_by")
    _, lo2, hi2, g = _comprehension(target, "reindex_by")
    if not source.decl().eq(target.decl()):
        raise Refused("reindex_by: the comprehensions are not of one kind")
    if not (z3.is_const(v) and v.decl().kind() == z3.Z3_OP_UNINTERPRETED and v.sort().eq(INDEX)):
        raise Refused(f"reindex_by: {v} is not a free 64-bit symbol")
    expected = z3.Not(z3.And(z3.And(under, z3.ULE(lo2, v), z3.ULT(v, hi2)),
                             body_at(g, v) != body_at(f, _apply(phi, v))))
    if not body.conclusion.eq(expected):
        raise Refused(f"reindex_by: the premise {body.conclusion} is not the body condition at {v}")
    others = z3.substitute(phi[1], (phi[0], z3.FreshConst(INDEX, "phi")))   # φ's term but for its variable
    if any(mentions(t, v) for t in (under, source, target, others, *body.hypotheses)):
        raise Refused(f"reindex_by: {v} occurs outside the premise's body")
    j, k, i = (z3.FreshConst(INDEX, n) for n in ("j", "k", "i"))
    conditions = {
        "into": z3.ForAll([j], z3.Implies(_inside(j, lo2, hi2), _inside(_apply(phi, j), lo, hi))),
        "injective": z3.ForAll([j, k], z3.Implies(z3.And(_inside(j, lo2, hi2), _inside(k, lo2, hi2),
                                                         _apply(phi, j) == _apply(phi, k)), j == k)),
        "onto": z3.ForAll([i], z3.Implies(_inside(i, lo, hi), z3.And(_inside(_apply(psi, i), lo2, hi2),
                                                                     _apply(phi, _apply(psi, i)) == i))),
    }
    sides = [_side(f"reindex_by: {name}", c, under, checker, timeout_s) for name, c in conditions.items()]
    return _mint(_conditional(under, source == target), "reindex_by", (body, *sides))


@rule
def regroup(whole: z3.ExprRef, grouped: z3.ExprRef, checker: Checker, timeout_s: float,
            under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → Σ_{m∈[a,hi)} h(m) = Σ_{i∈[lo,lo+n)} Σ_{r∈[0,b)} h(a + (i - lo)·b + r), for whole = Sum(a, hi, h)
    and grouped = Sum(lo, lo + n, λi. Sum(0, b, λr. h(a + (i - lo)·b + r))) with n, b numerals (a range cut into
    n consecutive runs of b), given the obligation under → lo ≤ lo + n ∧ hi = a + n·b, the last on exact
    (128-bit) integers.

    The rule checks `grouped` structurally at a fresh i and r (a run's body is h at a + (i - lo)·b + r, whatever
    its binders are named). Proof: (i, r) ↦ a + (i - lo)·b + r is a bijection [lo, lo+n) × [0, b) →
    [a, a + n·b) (no index wraps: a + n·b = hi < 2^64, and lo + n does not wrap), and finite sums of reals may
    be regrouped."""
    under = z3.BoolVal(True) if under is None else under
    op, a, hi, h = _comprehension(whole, "regroup")
    if not (z3.is_app(grouped) and grouped.decl().eq(SUM) and whole.decl().eq(SUM)):
        raise Refused("regroup: only a Sum is regrouped")
    lo, end, outer = grouped.children()
    i, r = z3.FreshConst(INDEX, "i"), z3.FreshConst(INDEX, "r")
    n, inner = z3.simplify(end - lo), body_at(outer, i)
    if not (z3.is_bv_value(n) and z3.is_app(inner) and inner.decl().eq(SUM) and z3.is_bv_value(inner.arg(1))
            and z3.is_bv_value(inner.arg(0)) and inner.arg(0).as_long() == 0):
        raise Refused(f"regroup: {grouped} is not a Sum of n runs Sum(0, b, ...)")
    b = inner.arg(1).as_long()
    if not body_at(inner.arg(2), r).eq(body_at(h, a + (i - lo) * b + r)):
        raise Refused(f"regroup: {grouped} is not {whole} in runs of {b}")
    exact = z3.And(z3.ULE(lo, end), z3.ZeroExt(64, hi) == z3.ZeroExt(64, a) + n.as_long() * b)   # no wrap of either
    side = _side(f"regroup: the range has {n.as_long()}·{b} elements", exact, under, checker, timeout_s)
    return _mint(_conditional(under, whole == grouped), "regroup", (side,))


@rule
def split_range(whole: z3.ExprRef, m: z3.BitVecRef, checker: Checker, timeout_s: float,
                under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → Σ_{[lo,hi)} f = Σ_{[lo,m)} f + Σ_{[m,hi)} f, for whole = Sum(lo, hi, f), given the
    obligation under → lo ≤ m ≤ hi (unsigned); for a Prod the same with · for +. (Outside that order the
    identity fails: with m < lo the first part is empty and the second counts [m, lo) too.)"""
    under = z3.BoolVal(True) if under is None else under
    op, lo, hi, f = _comprehension(whole, "split_range")
    if not m.sort().eq(INDEX):
        raise Refused(f"split_range: the split point {m} is not a 64-bit index")
    side = _side("split_range: lo ≤ m ≤ hi", z3.And(z3.ULE(lo, m), z3.ULE(m, hi)), under, checker, timeout_s)
    decl = whole.decl()
    return _mint(_conditional(under, whole == op.of([decl(lo, m, f), decl(m, hi, f)])), "split_range", (side,))


@rule
def unroll(whole: z3.ExprRef, count: int, checker: Checker, timeout_s: float,
           under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → Σ_{[lo,hi)} f = f(lo) + f(lo + 1) + … + f(lo + p - 1) (0 when p = 0), for whole =
    Sum(lo, hi, f) and a number p ≥ 0, given the obligation under → hi = lo + p on exact integers (both
    zero-extended to 128 bits: then no index lo + t, t < p, wraps, and [lo, hi) is exactly those p indices);
    for a Prod the same with · for + (1 when p = 0); for MaxFrom(init, lo, hi, f) (MinFrom) the definition
    max(init, f(lo), …, f(lo + p - 1)) as a tree of If(a >= b, a, b) (init when p = 0)."""
    under = z3.BoolVal(True) if under is None else under
    op, init, lo, hi, f = _reduction(whole, "unroll")
    if count < 0:
        raise Refused(f"unroll: a negative count {count}")
    exact = z3.ZeroExt(64, hi) == z3.ZeroExt(64, lo) + count
    side = _side(f"unroll: the range has {count} elements", exact, under, checker, timeout_s)
    terms = ([] if init is None else [init]) + [body_at(f, lo + t) for t in range(count)]
    return _mint(_conditional(under, whole == op.of(terms)), "unroll", (side,))


Piece = tuple[z3.ExprRef, tuple[tuple[z3.BitVecRef, z3.ArithRef, z3.ExprRef], ...]]   # (a Sum, its lanes)


@rule
def sum_apart(whole: z3.ExprRef, lanes: tuple[tuple[z3.BitVecRef, z3.ArithRef, z3.ExprRef], ...], checker: Checker,
              timeout_s: float, under: z3.BoolRef | None = None) -> Theorem:
    """`sums_apart` of one Sum: ⊢ under → whole = H_1 + … + H_n (the theorem keeps the `sums_apart` step)."""
    return sums_apart(((whole, lanes),), checker, timeout_s, under)


@rule
def sums_apart(pieces: tuple[Piece, ...], checker: Checker, timeout_s: float,
               under: z3.BoolRef | None = None) -> Theorem:
    """⊢ under → ∧_k (Σ_{j∈[lo,hi)} f(j) = H_1 + … + H_n) over the pieces (whole, lanes), for whole = Sum(lo, hi, f)
    and lanes (v, t_l, H_l), each head H_l either Sum(lo, c_l, g_l) or the numeral 0 (then c_l = lo), given the
    obligations (each under `under`): f(j) = t_1(j) + … + t_n(j) for j ∈ [lo, hi) (t_l(j) is t_l with v := j),
    and per lane lo ≤ c_l ≤ hi, t_l(j) = g_l(j) for j ∈ [lo, c_l), t_l(j) = 0 for j ∈ [c_l, hi). A single piece
    concludes its one equation. Each kind of condition is one obligation over all pieces (their conjunction), so
    a block's thousand lanes cost four obligations, not four thousand.

    Proof, piece by piece: Σ_j Σ_l t_l(j) = Σ_l Σ_j t_l(j) (finite sums commute), and each lane's sum, split at
    c_l (`split_range`), is its head's terms plus a tail of zeros: a masked load's padding past a ragged row's
    end, or a last, partial tile's zero loads, cut off lane by lane."""
    under = z3.BoolVal(True) if under is None else under
    if not pieces:
        raise Refused("sums_apart: no Sum to take apart")
    j = z3.FreshConst(INDEX, "j")
    conditions: dict[str, list[z3.BoolRef]] = {"head": [], "cut": [], "tail": [], "lanes": []}
    equations = []
    for whole, lanes in pieces:
        op, lo, hi, f = _comprehension(whole, "sum_apart")
        if not whole.decl().eq(SUM) or not lanes:
            raise Refused("sum_apart: only a Sum is taken apart, into at least one lane")
        terms, heads = [], []
        for n, (v, t, head) in enumerate(lanes):
            if not (z3.is_const(v) and v.sort().eq(INDEX)):
                raise Refused(f"sum_apart: lane {n}'s variable {v} is not a 64-bit symbol")
            term = z3.substitute(t, (v, j))
            if z3.is_rational_value(head) and head.as_fraction() == 0:
                cut = lo
            else:
                _, lo2, cut, g = _comprehension(head, "sum_apart")
                if not head.decl().eq(SUM) or not lo2.eq(lo):
                    raise Refused(f"sum_apart: lane {n}'s head {head} is not a Sum from {lo}")
                conditions["head"].append(z3.Implies(_inside(j, lo, cut), term == body_at(g, j)))
            conditions["cut"].append(z3.And(z3.ULE(lo, cut), z3.ULE(cut, hi)))
            conditions["tail"].append(z3.Implies(_inside(j, cut, hi), term == 0))
            terms.append(term)
            heads.append(head)
        conditions["lanes"].append(z3.Implies(_inside(j, lo, hi), body_at(f, j) == op.of(terms)))
        equations.append(whole == op.of(heads))
    sides = [_side(f"sum_apart: {name}", z3.And(cs) if name == "cut" else z3.ForAll([j], z3.And(cs)), under,
                   checker, timeout_s) for name, cs in conditions.items() if cs]
    return _mint(_conditional(under, equations[0] if len(equations) == 1 else z3.And(equations)), "sum_apart",
                 tuple(sides))
