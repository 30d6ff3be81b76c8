"""The terms an atomic adds, and the terms of the reference's sum it is matched against.

A loss kernel adds one value per block: `atomicAdd(out, total / n)`, where `total` is the block's
shared-memory tree over its threads' grid-stride partial sums. Simplified, that value is Σᵢ c·Sᵢ — one
`Sum` comprehension per thread of the tree (its thread id a constant), each over the thread's loop
iterations, its body the iterations the loop was unrolled into, the mean's 1/n distributed by z3. Over the
reals the block's value is then the sum of its *terms* c·lane(τ, k), one per leaf τ of the tree, iteration
k of that leaf's loop and unrolled lane; so the total over all blocks is the sum over all
(block, τ, k, lane) of those terms, and atomics.py can match that multiset against the reference's terms
exactly as it matches single added values (into, injective, onto), with τ and k as further variables of an
instance. The leaves are not enumerated: the Sᵢ of one shape are folded into one template over a box of
τ (`semantics.properties.fold`), each fold proved to be exactly its members, one per point.

The reference's mean over several dimensions is a nest of Sums, Σ_{m₀} Σ_{m₁} h(m₀, m₁): its terms are
indexed by the tuple (m₀, m₁, …), each component ranging as its Sum says (an inner range may depend on an
outer index). Nothing is flattened: the obligations speak of the tuple.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from semantics.comprehension import COMPREHENSIONS, SUM, scaled_sum
from semantics.properties.fold import fold
from semantics.properties.reductions import open_family
from semantics.properties.unions import summands
from semantics.ptx.state import Access
from semantics.terms import constants, is_read, mentions, reaching, subterms

MAX_TERMS = 16   # terms per atomic site (folded templates × unrolled lanes): each one pair of obligations per other


@dataclass(frozen=True)
class Instance:
    """One term an atomic site adds, as performed by the symbolic thread (and its loop iterations; for a
    term of a sum, also its leaf τ and its iteration k)."""

    access: Access
    variables: list[z3.BitVecRef]   # thread coordinates, loop iterations, and a term's τ and k
    adds_into_l: z3.BoolRef         # the instance happens (over-approximated in loops) and adds into L
    happens: z3.BoolRef             # the instance happens, loop reachability exact
    value: z3.ArithRef
    axes: tuple[tuple[z3.BitVecRef, int], ...] = ()   # a folded term's τ variables, each over [0, n)

    def flipped(self, tau: z3.BitVecRef, n: int) -> Instance:
        """The same terms with τ run backwards (τ := n - 1 - τ): a bijection of [0, n) onto itself, and outside
        it both forms are out of the box (n - 1 - τ wraps above n), so the instance adds exactly what it did."""
        at = (tau, n - 1 - tau)
        return Instance(self.access, self.variables, z3.substitute(self.adds_into_l, at),
                        z3.substitute(self.happens, at), z3.substitute(self.value, at), self.axes)


@dataclass(frozen=True)
class Reference:
    """The reference's sum as its terms h(ms) over the tuple of indices ms of its nested Sums."""

    h: z3.ArithRef
    ms: tuple[z3.BitVecRef, ...]
    in_range: z3.BoolRef
    bounds: tuple[tuple[z3.BitVecRef, z3.BitVecRef], ...]   # (lo, hi) of each index, outermost first


def reference_terms(total: z3.ExprRef) -> Reference:
    """Open `total` (a Sum) and every Sum that is exactly the body of the one around it."""
    ms, bounds, t = [], [], total
    while True:
        family = open_family(t, f"m{len(ms)}!", split=False)
        ms.append(family.var)
        bounds.append((family.lo, family.hi))
        body = family.lanes[0]
        if not (z3.is_app(body) and body.decl() == SUM):
            in_range = z3.And([z3.And(z3.ULE(lo, m), z3.ULT(m, hi)) for m, (lo, hi) in zip(ms, bounds, strict=True)])
            return Reference(body, tuple(ms), in_range, tuple(bounds))
        t = body


def flat_strides(ref: Reference) -> list[int] | None:
    """The row-major strides of the reference's indices when every range is [0, n) with n a constant: a
    flat index p is then the tuple (p / s₀ mod n₀, …) (what an untrusted hint is turned into; the
    obligations judge the tuple). None otherwise."""
    sizes = []
    for lo, hi in ref.bounds:
        lo, hi = z3.simplify(lo), z3.simplify(hi)
        if not (z3.is_bv_value(lo) and z3.is_bv_value(hi)) or lo.as_long() != 0:
            return None
        sizes.append(hi.as_long())
    strides, s = [], 1
    for n in reversed(sizes):
        strides.insert(0, s)
        s *= n
    return strides


def digits(flat: z3.BitVecRef, ref: Reference, strides: list[int]) -> tuple[z3.BitVecRef, ...]:
    """The tuple of reference indices a flat row-major index stands for."""
    out = []
    for k, ((_, hi), s) in enumerate(zip(ref.bounds, strides, strict=True)):
        q = z3.UDiv(flat, s) if s != 1 else flat
        out.append(q if k == 0 else z3.URem(q, z3.simplify(hi)))
    return tuple(out)


def full_inputs(ref: Reference) -> frozenset[str]:
    """The inputs the reference's term reads only at indices that move with every one of its indices: an
    element of one of them belongs to one term (a broadcast input, read at fewer indices, is shared)."""
    reads = [t for t in subterms(ref.h) if is_read(t)]
    names = {r.decl().name() for r in reads}
    return frozenset(n for n in names if all(all(mentions(r.arg(0), m) for m in ref.ms)
                                             for r in reads if r.decl().name() == n))


def split(inst: Instance, proved: Callable[[z3.BoolRef, str], bool], key: str,
          own: frozenset[str]) -> list[Instance] | str:
    """The terms of an instance whose value is a sum of Sums (a block's tree of partial sums), or the
    instance itself when its value is no such sum; a string says why it cannot be split.
    `proved(formula, name)` decides a fold's obligation (unsat proves it); `own` names the inputs whose
    elements belong to one term each (`full_inputs`)."""
    value = z3.simplify(inst.value, elim_sign_ext=False)
    if not reaching(value, COMPREHENSIONS):
        return [inst]
    groups: dict[str, tuple[z3.ArithRef, list[z3.ExprRef]]] = {}
    plain = []
    for u in summands(value):
        scaled = scaled_sum(u)
        if scaled is not None and z3.is_quantifier(scaled[1].arg(2)) and \
                not reaching(scaled[1].arg(2), COMPREHENSIONS):
            groups.setdefault(str(scaled[0]), (scaled[0], []))[1].append(scaled[1])
        elif reaching(u, COMPREHENSIONS):
            return [inst]   # (a function of whole reductions, one per block: matched as one term)
        else:
            plain.append(_term(inst, (), None, z3.BoolVal(True), u))
    out = plain
    for g, (c, parts) in enumerate(groups.values()):
        folds, alone = fold(parts, f"{key}.g{g}.")
        families = []
        for f in folds:
            if f.fills_box() and f.syntactic() and proved(f.equalities(), f"{len(f.members)} summed terms are one "
                                                                          f"term at τ ∈ {f.outer.describe()}"):
                families.append((f.template, tuple(zip(f.outer.vars, f.outer.counts, strict=True)),
                                 f.outer.contains(f.outer.vars)))
            else:
                alone.extend(f.members)
        families += [(part, (), z3.BoolVal(True)) for part in alone]
        for n, (template, axes, in_box) in enumerate(families):
            family = open_family(template, f"k!{key}.{g}.{n}", split=True)
            k = family.var
            inside = z3.And(in_box, z3.ULE(family.lo, k), z3.ULT(k, family.hi))
            out += [_term(inst, axes, k, inside, c * lane) for lane in _by_reads(family.lanes, own)]
    if len(out) > MAX_TERMS:
        return f"it adds {len(out)} kinds of terms (more than {MAX_TERMS} after folding)"
    return out


def _by_reads(summands: tuple[z3.ArithRef, ...], own: frozenset[str]) -> list[z3.ArithRef]:
    """A loop body's summands added up in groups that share a read of an input in `own`: one iteration of a
    loop unrolled by nvcc is one lane, but z3 may have split an iteration's value into summands
    (t·log t − t·log p), and a term of the reference is the iteration's whole value. (A broadcast input's
    element is read by several iterations: it joins nothing.) Each summand is in exactly one group."""
    groups: list[tuple[set[int], list[z3.ArithRef]]] = []
    for u in summands:
        reads = {t.get_id() for t in subterms(u) if is_read(t) and t.decl().name() in own}
        joined = [g for g in groups if g[0] & reads]
        merged = (reads.union(*(g[0] for g in joined)), [m for g in joined for m in g[1]] + [u])
        groups = [g for g in groups if not any(g is j for j in joined)] + [merged]
    return [z3.Sum(*members) if len(members) > 1 else members[0] for _, members in groups]


def _term(inst: Instance, axes: tuple, k: z3.BitVecRef | None, inside: z3.BoolRef, value: z3.ArithRef) -> Instance:
    more = [tau for tau, _ in axes] + ([k] if k is not None else [])
    return Instance(inst.access, [*inst.variables, *more], z3.And(inst.adds_into_l, inside),
                    z3.And(inst.happens, inside), value, axes)


def oriented(inst: Instance, index: z3.BitVecRef | None) -> Instance:
    """The instance with every τ that moves `index` (the input element its term reads) backwards flipped, so
    that the index grows with each τ: the writer prover decodes mixed radix with positive coefficients. A
    choice of parametrisation made from the instance alone (not from a hint), so a replay makes it again."""
    if index is None:
        return inst
    for tau, n in inst.axes:
        if step(index, tau) < 0:
            inst = inst.flipped(tau, n)
            index = z3.substitute(index, (tau, n - 1 - tau))
    return inst


def linear_guess(index: z3.BitVecRef, variables: list[z3.BitVecRef]) -> z3.BitVecRef:
    """index as c + Σ dᵥ·v, its numbers read off at 0 and 1 (a guess, for a prover's question only: a
    per-row kernel's row (3660 + 4096·b) / 4096 is then b)."""
    others = [(c, z3.BitVecVal(0, c.size())) for c in constants(index) if z3.is_bv(c)]
    at0 = z3.simplify(z3.substitute(index, *others)) if others else z3.simplify(index)
    if not z3.is_bv_value(at0):
        return index
    wide = [(v, z3.ZeroExt(index.size() - v.size(), v) if v.size() < index.size() else v) for v in variables
            if v.size() <= index.size()]
    return sum((step(index, v) * w for v, w in wide if step(index, v)), at0)


def step(index: z3.BitVecRef, var: z3.BitVecRef) -> int:
    """How `index` moves per step of var, read at var = 0 with every other symbol 0 (a guess, signed)."""
    others = [(c, z3.BitVecVal(0, c.size())) for c in constants(index) if z3.is_bv(c) and not c.eq(var)]
    at = [z3.simplify(z3.substitute(index, (var, z3.BitVecVal(v, var.size())), *others)) for v in (0, 1)]
    if not all(z3.is_bv_value(a) for a in at):
        return 0
    d = (at[1].as_long() - at[0].as_long()) % (1 << index.size())
    return d - (1 << index.size()) if d >= 1 << (index.size() - 1) else d

