"""The kernel's unions: several comprehensions (or a fully unrolled tree) that together are one reduction.

A block's partial sums added up, a max tree over a block's partial maxima, a mean's Σ c·Sᵢ, a Triton
`tl.max` unrolled over registers and lanes: the trusted matcher (`semantics.properties.reductions`) proves
each union equal to one reference comprehension and then names it by one symbol (`Union.replaced`). This
module only finds them and says how the kernel reads with the symbol in; nothing here is assumed, every
equality is the matcher's proved obligation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from semantics.canonical import is_extremum_node
from semantics.comprehension import COMPREHENSIONS, MAX_FROM, MIN_FROM, SUM, is_comprehension, scaled_sum
from semantics.terms import reaching, reaching_ids, subterms

MATCHED = (SUM, MAX_FROM, MIN_FROM)   # the comprehensions whose theorems the matcher states
EXTREMA = (MAX_FROM, MIN_FROM)        # unions of these are sets of elements (the inits among them)


def _max_elements(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The elements of a max-tree: leaves of If(a >= b, a, b) nodes, with each MaxFrom's initial value taken
    out as an element of its own (max(init, F) is the max over {init} ∪ F)."""
    out, todo = [], [term]
    while todo:
        t = todo.pop()
        if _is_max_node(t):
            todo.extend([t.arg(1), t.arg(2)])
        elif z3.is_app(t) and t.decl() == MAX_FROM:
            out.append(t)              # its family; `_equal(..., inits_apart=True)` leaves its init out
            todo.append(t.arg(0))      # and its initial value as an element of its own
        else:
            out.append(t)
    return out


def _chain(t: z3.ExprRef) -> list[z3.ExprRef]:
    """The elements of a running max/min whose start is another such reduction (nvcc's unrolled loop and its
    remainder loop, the remainder's MaxFrom starting from the main loop's): each comprehension of the
    chain as a family (its init left out, `_equal(..., inits_apart=True)`) and the first start as an element
    of its own. Empty unless `t` is such a chain."""
    if not (z3.is_app(t) and t.decl() in EXTREMA and z3.is_app(t.arg(0)) and t.arg(0).decl() == t.decl()):
        return []
    decl = t.decl()
    out = []
    while z3.is_app(t) and t.decl() == decl:
        out.append(t)
        t = t.arg(0)
    return [*out, t]


@dataclass(frozen=True)
class Union:
    """Several comprehensions of the kernel that together are one reduction: the elements of a max tree
    (`term` its root), or Sum comprehensions that a sum (`term`) adds, each times one rational `coefficient`
    c — z3 distributes a mean's 1/n over the sum of a block's partial sums, so a mean is Σ c·Sᵢ."""

    term: z3.ExprRef
    decl: z3.FuncDeclRef
    parts: list[z3.ExprRef]
    members: list[z3.ExprRef]            # sums: the summands of `term` that are the parts (Sᵢ or c·Sᵢ); max: []
    coefficient: z3.ArithRef | None = None
    flat: bool = False                   # an unrolled sum's members c·pᵢ (pᵢ the parts), direct summands of term

    def replaced(self, kernel: z3.ExprRef, symbol: z3.ArithRef) -> z3.ExprRef:
        """The kernel with the union's value named by `symbol` (proved equal to the reduction of the parts)."""
        if self.decl in EXTREMA:
            return z3.substitute(kernel, (self.term, symbol))
        if not self.flat and _grouped_everywhere(kernel, self.parts, self.members):
            # every occurrence of a part is as a member of a sum that holds all of them (in the value and
            # inside comprehension bodies: a variance's Σ (x - mean)²): there Σ c·Sᵢ = c·σ, which is what the
            # first part as σ and the others as 0 leave
            zero = z3.RealVal(0)
            return z3.simplify(z3.substitute(kernel, (self.parts[0], symbol), *[(p, zero) for p in self.parts[1:]]),
                               elim_sign_ext=False)
        members = {m.get_id() for m in self.members}
        rest = [u for u in summands(self.term) if u.get_id() not in members]
        return z3.substitute(kernel, (self.term, z3.Sum(*rest, self.coefficient * symbol)))


def _grouped_everywhere(kernel: z3.ExprRef, parts: list[z3.ExprRef], members: list[z3.ExprRef]) -> bool:
    """Whether each part occurs in `kernel` only as a member, and each member only in sums that hold all the
    members."""
    member_ids, part_ids = {m.get_id() for m in members}, {p.get_id() for p in parts}
    for t in subterms(kernel):
        kids = {k.get_id() for k in ([t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else [])}
        touched = kids & (member_ids | part_ids)
        if not touched or t.get_id() in member_ids:
            continue
        if not z3.is_add(t) or not member_ids <= kids or touched - member_ids:
            return False
    return True


def _is_real_add(t: z3.ExprRef) -> bool:
    return z3.is_add(t) and z3.is_real(t)


def summands(t: z3.ExprRef) -> list[z3.ExprRef]:
    """The summands of a tree of real additions (each as often as it occurs): the term is their sum, + being
    associative. A flat sum's are its children."""
    out, todo = [], [t]
    while todo:
        u = todo.pop()
        if _is_real_add(u):
            todo.extend(reversed(u.children()))
        else:
            out.append(u)
    return out


def _is_max_node(t: z3.ExprRef) -> bool:
    return is_extremum_node(t, greater=True)


def unions(term: z3.ExprRef) -> list[Union]:
    """The kernel's unions whose comprehensions are all innermost, found top-down outside binders: max trees
    by their roots (a subtree is not a union of its own), sums by the groups of Sum summands with one
    coefficient."""
    holding = reaching(term, COMPREHENSIONS)

    def innermost_part(t: z3.ExprRef) -> bool:   # (a Prod is no part: the union holding one is left alone)
        return is_comprehension(t) and t.decl() in MATCHED and t.arg(t.num_args() - 1).get_id() not in holding

    out: list[Union] = []
    todo, seen = [(term, False)], set()
    while todo:
        t, in_max = todo.pop()
        if (t.get_id(), in_max) in seen or t.get_id() not in holding:
            continue
        seen.add((t.get_id(), in_max))
        is_max, chain = _is_max_node(t), [] if in_max else _chain(t)
        if is_max and not in_max:
            elements = _max_elements(t)
            if any(is_comprehension(e) for e in elements) and \
                    all(innermost_part(e) or e.get_id() not in holding for e in elements):
                out.append(Union(t, MAX_FROM, elements, []))
        elif chain:
            if all(innermost_part(e) or e.get_id() not in holding for e in chain):
                out.append(Union(t, t.decl(), chain, []))
            continue   # (a chain's tail is no union of its own)
        elif z3.is_add(t):
            out.extend(_sum_groups(t, innermost_part))
        children = [t.arg(1), t.arg(2)] if is_max else t.children() if z3.is_app(t) else []
        todo.extend((c, is_max) for c in children)
    return out


MIN_UNROLLED = 8   # elements (summands) of a comprehension-free max tree (sum) tried as a reduction: fewer are a
                   # kernel's own arithmetic (relu's max(x, 0), a bias add), not a reduction over a tensor axis


def unrolled(term: z3.ExprRef) -> list[Union]:
    """Reductions the kernel unrolled completely (a Triton `tl.max`/`tl.sum` over a block's registers and
    lanes, `semantics.canonical` having made every lane's copy one term): max trees of at least MIN_UNROLLED
    elements and sums of at least MIN_UNROLLED summands with no comprehension in them, innermost first —
    those with no other such reduction inside (the row max before the sum of exp(x - max))."""
    if reaching(term, COMPREHENSIONS):
        return []
    inner_nodes: set[int] = set()
    found: list[tuple[z3.ExprRef, z3.FuncDeclRef, list[z3.ExprRef]]] = []
    inner_sums: set[int] = set()
    for t in subterms(term):
        if _is_max_node(t):
            inner_nodes.update(c.get_id() for c in t.children()[1:] if _is_max_node(c))
        elif _is_real_add(t):
            inner_sums.update(c.get_id() for c in t.children() if _is_real_add(c))
    for t in subterms(term):
        if _is_max_node(t) and t.get_id() not in inner_nodes:
            found.append((t, MAX_FROM, _max_elements(t)))
        elif _is_real_add(t) and t.get_id() not in inner_sums:
            # the summands of the whole tree (an fma chain nests its adds) are its members, replaced at once
            found.append((t, SUM, summands(t)))
    found = [(t, decl, parts) for t, decl, parts in found if len(parts) >= MIN_UNROLLED]
    roots = {t.get_id() for t, _, _ in found}
    ref = term.ctx_ref()
    holding = reaching_ids(term, lambda ast: z3.Z3_get_ast_id(ref, ast) in roots)
    out = []
    for t, decl, parts in found:
        if any(part.get_id() in holding for part in parts):
            continue
        scaled = _scaled_summands(parts) if decl == SUM else None
        if scaled is not None:
            out.append(scaled(t))
        else:
            out.append(Union(t, decl, parts, parts if decl == SUM else [], z3.RealVal(1) if decl == SUM else None))
    return out


def _scaled_summands(summands: list[z3.ExprRef]) -> Callable[[z3.ExprRef], Union] | None:
    """The union of an unrolled sum whose summands are mostly c·pᵢ for one rational c ≠ 1 (z3 distributed a
    mean's 1/n over the unrolled sum, next to an epsilon): its parts the pᵢ, its members the c·pᵢ. None when
    no such group has MIN_UNROLLED summands and more than half of them."""
    groups: dict[str, tuple[z3.ArithRef, list, list]] = {}
    for u in summands:
        if z3.is_mul(u) and z3.is_rational_value(u.arg(0)) and u.num_args() >= 2:
            rest = u.arg(1) if u.num_args() == 2 else z3.Product(*u.children()[1:])
            groups.setdefault(str(u.arg(0)), (u.arg(0), [], []))
            groups[str(u.arg(0))][1].append(rest)
            groups[str(u.arg(0))][2].append(u)
    best = max(groups.values(), key=lambda g: len(g[1]), default=None)
    if best is None or len(best[1]) < max(MIN_UNROLLED, len(summands) // 2 + 1):
        return None
    c, parts, members = best
    return lambda t: Union(t, SUM, parts, members, c, flat=True)


def _sum_groups(t: z3.ExprRef, innermost_part: Callable) -> list[Union]:
    """The summands of the sum t that are Sum comprehensions times one coefficient, by coefficient."""
    groups: dict[str, tuple[z3.ArithRef, list, list]] = {}
    for u in t.children():
        scaled = scaled_sum(u)
        if scaled is not None and innermost_part(scaled[1]):
            c, part = scaled
            groups.setdefault(str(c), (c, [], []))
            groups[str(c)][1].append(part)
            groups[str(c)][2].append(u)
    return [Union(t, SUM, parts, members, c) for c, parts, members in groups.values() if len(parts) > 1]
