"""A loop body's tree of guarded partial sums, written as one guarded summand per term.

A 2-D or 3-D window unrolled inside a channel loop tests its taps in a tree: nvcc hoists the row test out of
the column taps and merges it with the last column's test, so one iteration adds

    If(row ∧ col₂, g₀ + g₁ + t₂, If(row, g₀ + g₁, 0))        (gₖ = If(colₖ, tₖ, 0))

where the reference adds If(row ∧ colₖ, tₖ, 0) for each tap. No summand of the kernel's body is a tap, so
the matcher cannot pair the loop's terms with the reference's. Each real If over sums is distributed here,

    If(c, a₁ + … + aₙ, b₁ + … + bₘ) = If(c, a₁, 0) + … + If(c, aₙ, 0) + If(¬c, b₁, 0) + … + If(¬c, bₘ, 0),

nested guards conjoined, and the summands of one term joined into If(g₁ ∨ g₂ ∨ …, t, 0) (the paths of an
If are disjoint, which the proof below checks, as it checks everything). The body's new form is proved equal
to the old at every index of the loop (`by_atoms`: guards and terms read as atoms, an identity of + and If),
and the kernel's `reindex_by` with the identity map gives ⊢ h → Sum(new) = Sum(old): a `Step` that
`compose.close` undoes. Untrusted: a wrong form is refused by the rules and the lane keeps its own term.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.comprehension import SUM, body_at
from semantics.proof import Refused
from semantics.proof.sums import reindex_by
from semantics.properties.compose import Step, by_atoms
from semantics.terms import outside_binders, subterms

ZERO = z3.RealVal(0)
TIDY_MS = 1000    # each propositional question of `_tidy`

Guards = dict[int, tuple[z3.ExprRef, z3.BoolRef]]   # term id -> (term, the guard under which the body adds it)


def rewrite(kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef, checker: Checker,
            timeout_s: float, record) -> tuple[z3.ExprRef, list[Step]]:
    """The kernel with each closed Sum whose body is a tree of guarded partial sums in the guarded-summand
    form, and the steps that undo it (none where nothing changed or a proof was refused)."""
    steps = []
    for total in outside_binders(kernel, (SUM,)):
        if not z3.is_quantifier(total.arg(2)):
            continue
        index = z3.FreshConst(z3.BitVecSort(64), "tree")
        guards = _tree_guards(body_at(total.arg(2), index))
        if guards is None:
            continue
        flat = SUM(total.arg(0), total.arg(1), z3.Lambda([index], _joined(guards)))
        taps = [t for t, _ in guards.values()]
        equation = _equation(flat, total, index, taps, hypothesis, checker, timeout_s, record)
        if equation is None:
            continue
        steps.append(Step(kernel, reference, equation))
        kernel = z3.substitute(kernel, (total, flat))
    return kernel, steps


def flattened(body: z3.ExprRef) -> z3.ExprRef | None:
    """`body` as a sum of If(g, t, 0), one per term t, when it holds a real If with a sum in a branch; else
    None (a body the matcher reads as it is)."""
    guards = _tree_guards(body)
    return None if guards is None else _joined(guards)


def _tree_guards(body: z3.ExprRef) -> Guards | None:
    """The body's terms with their guards when it holds a real If with a sum in a branch, else None."""
    if not z3.is_real(body) or not any(_branches_a_sum(t) for t in _subterms(body)):
        return None
    return _guards(body, {})


def _joined(guards: Guards) -> z3.ExprRef:
    """One If(g, t, 0) per term t, its guard tidied."""
    summands = []
    for term, guard in guards.values():
        guard = _tidy(guard)
        summands.append(term if z3.is_true(guard) else z3.If(guard, term, ZERO))
    return ZERO if not summands else summands[0] if len(summands) == 1 else z3.Sum(*summands)


def _guards(term: z3.ExprRef, memo: dict[int, Guards]) -> Guards:
    """Each term the guarded sum `term` adds, with its guard: If conjoins its condition (or its negation) onto
    each branch's guards, zero adds nothing, and a term that several parts add is added under the disjunction
    of their guards (the paths of an If are disjoint; the proof below checks it, as it checks everything).
    Memoised per subterm: nvcc's tree repeats its partial sums in both branches of each test, so the paths
    through a 3-D window's 27 taps are far too many to list, and the guards are shared terms instead."""
    key = term.get_id()
    if key in memo:
        return memo[key]
    if z3.is_add(term):
        parts = [(z3.BoolVal(True), c) for c in term.children()]
    elif z3.is_app_of(term, z3.Z3_OP_ITE):
        cond, then, other = term.children()
        parts = [(cond, then), (z3.Not(cond), other)]
    elif z3.is_rational_value(term) and term.as_fraction() == 0:
        parts = []
    else:
        parts = None
    out: Guards = {key: (term, z3.BoolVal(True))} if parts is None else {}
    for cond, part in parts or []:
        for k, (t, g) in _guards(part, memo).items():
            g = cond if z3.is_true(g) else g if z3.is_true(cond) else z3.And(cond, g)
            out[k] = (t, g if k not in out else z3.Or(out[k][1], g))
    memo[key] = out
    return out


def _tidy(guard: z3.BoolRef) -> z3.BoolRef:
    """The conjunction of literals `guard` is, when it is one, else `guard`: read propositionally (each
    comparison a truth value), the literals it implies, where their conjunction implies it back. nvcc's
    merged tests `Or(¬row, row ∧ ¬col₂)` leave guards whose union is just row ∧ col, the reference's guard,
    and the matcher pairs guards by their form."""
    leaves = _literals(guard)
    if not leaves:
        return guard
    names = [z3.FreshBool("tidy") for _ in leaves]
    g = z3.substitute(guard, *zip(leaves, names, strict=True))
    solver = z3.Solver()
    solver.set("timeout", TIDY_MS)
    solver.add(g)
    if solver.check() == z3.unsat:
        return z3.BoolVal(False)
    fixed = []
    for leaf, name in zip(leaves, names, strict=True):
        if solver.check(z3.Not(name)) == z3.unsat:
            fixed.append((leaf, name))
        elif solver.check(name) == z3.unsat:
            fixed.append((z3.Not(leaf), z3.Not(name)))
    back = z3.Solver()
    back.set("timeout", TIDY_MS)
    back.add(*[n for _, n in fixed], z3.Not(g))
    if back.check() != z3.unsat:
        return guard      # not a conjunction of literals: kept as it is
    return z3.And(*[lit for lit, _ in fixed]) if fixed else z3.BoolVal(True)


def _comparisons(conditions: list[z3.BoolRef]) -> list[z3.BoolRef]:
    """The distinct comparisons (`_literals`) of the If conditions: the joined guards are tidied over those, so
    the identity holds of them, not of the conditions as wholes."""
    out: dict[int, z3.BoolRef] = {}
    for condition in conditions:
        for leaf in _literals(condition):
            out.setdefault(leaf.get_id(), leaf)
    return list(out.values())


def _literals(guard: z3.BoolRef) -> list[z3.BoolRef]:
    """The comparisons that And, Or and Not combine in `guard`, in order of first appearance."""
    out, seen, todo = [], set(), [guard]
    while todo:
        t = todo.pop(0)
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_and(t) or z3.is_or(t) or z3.is_not(t):
            todo.extend(t.children())
        elif not (z3.is_true(t) or z3.is_false(t)):
            out.append(t)
    return out


def _branches_a_sum(term: z3.ExprRef) -> bool:
    return z3.is_app_of(term, z3.Z3_OP_ITE) and z3.is_real(term) and \
        any(z3.is_add(branch) for branch in term.children()[1:])


def _subterms(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The subterms of `term` that + and If reach (the tree's own nodes, not the inside of a tap)."""
    out, seen, todo = [], set(), [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        out.append(t)
        if z3.is_add(t):
            todo.extend(t.children())
        elif z3.is_app_of(t, z3.Z3_OP_ITE):
            todo.extend(t.children()[1:])
    return out


def _equation(flat: z3.ExprRef, total: z3.ExprRef, index: z3.BitVecRef, taps: list[z3.ExprRef],
              hypothesis: z3.BoolRef, checker: Checker, timeout_s: float, record):
    """⊢ h → flat = total by `reindex_by` with the identity map, its premise (the bodies agree at `index`) by
    `by_atoms` over the comparisons in the old body's If conditions and its taps, each tap (a product of reads)
    one atom, so the identity is linear; the new guards are built of those comparisons. None, the refusal
    recorded, when not proved."""
    inside = z3.And(hypothesis, z3.ULE(total.arg(0), index), z3.ULT(index, total.arg(1)))
    old, new = body_at(total.arg(2), index), body_at(flat.arg(2), index)
    premise = z3.Not(z3.And(inside, old != new))
    var, m = z3.FreshConst(z3.BitVecSort(64), "phi"), z3.FreshConst(z3.BitVecSort(64), "psi")
    try:
        conditions = [a for a in atoms([old]) if z3.is_bool(a)]
        distinct = {t.get_id(): t for t in taps}
        body = by_atoms(premise, [inside, *_comparisons(conditions), *distinct.values()], checker, timeout_s,
                        "equivalence: a loop body's tree of guarded sums is a sum of guarded terms")
        record(*body.evidence[0])
        equation = reindex_by(flat, total, (var, var), (m, m), body, index, checker, timeout_s, hypothesis)
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return None
    for ob, outcome in equation.evidence[len(body.evidence):]:
        record(ob, outcome)
    return equation


ARITHMETIC = (z3.Z3_OP_ADD, z3.Z3_OP_MUL, z3.Z3_OP_ITE, z3.Z3_OP_SUB, z3.Z3_OP_UMINUS, z3.Z3_OP_DIV)


def atoms(sides: list[z3.ExprRef]) -> list[z3.ExprRef]:
    """Each If's condition in `sides` and each real leaf (an input read, a value the arithmetic does not look
    into): read as atoms, the pull equation is an identity of + and If whatever the guards and reads are, so
    its obligation is propositional and linear instead of bit-blasting every guard and index (tens of seconds
    for a 3-D window's 27 taps)."""
    found: dict[int, z3.ExprRef] = {}
    for side in sides:
        for t in subterms(side):
            if z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_real(t) and not z3.is_true(t.arg(0)):
                found.setdefault(t.arg(0).get_id(), t.arg(0))
            elif z3.is_real(t) and not z3.is_rational_value(t) and not (z3.is_app(t) and t.decl().kind() in
                                                                        ARITHMETIC):
                found.setdefault(t.get_id(), t)
    return list(found.values())
