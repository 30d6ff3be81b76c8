"""Accumulation loops: a float register updated as `acc ⊕ T(k)` each iteration becomes a comprehension.

From one generic run of the loop body (every carried register a fresh header symbol), a register whose
back-edge value is `a + T` (T free of `a`) is a sum accumulator, one whose value is a product with `a` as
exactly one factor (`a · T`, T free of `a`) is a product accumulator, and one whose value is a max-tree with
`a` as exactly one leaf is a max accumulator (min likewise). At the start of iteration k it then holds
`acc₀ + Sum(0, k, λj. T(j))`, `acc₀ · Prod(0, k, λj. T(j))` or `MaxFrom(acc₀, 0, k, λj. T(j))`: exact, not an
approximation — by induction on k, since Sum/Prod/MaxFrom over [0, k+1) is the value over [0, k) combined
with T(k), and the back-edge value is the header value combined with T (the inductive step). For a sum the
step holds by construction (T is the simplified `next - a`, taken through the branches of a selection whose
condition is free of `a`: a guarded step `If(c, a + T, a)` sums `If(c, T, 0)`); for a product T is `next`
with the factor `a` taken out, and the step `next = a · T` is proved by the solver before the register is
summarised.

Floats are exact reals (DESIGN §3): `mul.f32`, `mul.rn.f32` and the other rounding modes all multiply
reals (`semantics/ptx/instructions.py`), as `add.f32` adds them; so the product accumulator is a product of
reals, with no rounding model, the same abstraction the sum accumulator uses. Anything else is not
summarised (the caller makes it opaque).

A sum step may also read the running max of the same loop (`depends`: `s += expf(v - fmaxf(m, v))`, an online
softmax that forgets to rescale): at the start of iteration j that register holds its own closed form at j
(a max from a real start, `MaxFrom(m_0, 0, j, T)`), so T(j) is the step with that value in place of its header
symbol, and the same induction gives s_k = s_0 + Σ_{j<k} T(j). (From -inf the max is the marker at j = 0,
which no step may compute with: such a sum is not summarised.)
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from semantics.canonical import is_extremum_node
from semantics.comprehension import MAX_FROM, MIN_FROM, PROD, SUM, max_over, min_over, prod_over, sum_over
from semantics.ptx import neginf
from semantics.ptx.machine import simplify
from semantics.terms import mentions

STEP_TIMEOUT_MS = 5000   # proving `next = a · T`, an identity of one product: instant when it holds


@dataclass(frozen=True)
class Accumulator:
    kind: str               # 'sum' | 'prod' | 'max' | 'min'
    header: z3.ArithRef     # the generic run's symbol for the register at the loop header
    step: z3.ArithRef       # T: what one iteration combines in, over the generic run's header symbols
    next_value: z3.ArithRef  # the back-edge value in the generic run
    depends: tuple[z3.ArithRef, ...] = ()   # header symbols of max accumulators whose value at k the step reads


def _leaves(term: z3.ExprRef, pick_greater: bool) -> list[z3.ExprRef]:
    """Flatten a tree of If(x >= y, x, y) (max) or If(x <= y, x, y) (min) nodes."""
    if is_extremum_node(term, pick_greater):
        return _leaves(term.arg(1), pick_greater) + _leaves(term.arg(2), pick_greater)
    return [term]


def _factors(term: z3.ExprRef) -> list[z3.ExprRef]:
    """Flatten a tree of products."""
    if z3.is_mul(term):
        return [f for child in term.children() for f in _factors(child)]
    return [term]


def _product_step(header: z3.ArithRef, next_value: z3.ArithRef) -> z3.ArithRef | None:
    """T when next_value is header · T with T free of header, the identity proved; None otherwise."""
    factors = _factors(next_value)
    own = [f for f in factors if z3.eq(f, header)]
    others = [f for f in factors if not z3.eq(f, header)]
    if len(own) != 1 or not others or any(mentions(f, header) for f in others):
        return None
    step = others[0] if len(others) == 1 else z3.Product(*others)
    solver = z3.Solver()
    solver.set("timeout", STEP_TIMEOUT_MS)
    solver.add(next_value != header * step)
    return step if solver.check() == z3.unsat else None


def _sum_step(header: z3.ArithRef, value: z3.ArithRef, memo: dict | None = None) -> z3.ArithRef | None:
    """T with value = header + T and T free of header: the simplified difference, or else T found through
    the term's structure, each case an identity of reals:
    * a selection If(c, a, b) with c free of header (a guarded step, `if (in range) acc += ...` joined with
      the path that skips it): If(c, T_a, T_b), since If(c, header + T_a, header + T_b) = header + If(c, T_a, T_b);
      when a = b + w, T_b + If(c, w, 0), so that guarded steps in a row stay separate terms;
    * a sum u + v₁ + … with only u mentioning header (guarded steps in a row): T_u + v₁ + …
    Each subterm's T is found once (`memo`): an unrolled 3-D window's tree shares its partial sums between
    branches, and walking it as a tree takes time exponential in its taps."""
    memo = {} if memo is None else memo
    if value.get_id() not in memo:
        memo[value.get_id()] = _sum_step_once(header, value, memo)
    return memo[value.get_id()]


def _sum_step_once(header: z3.ArithRef, value: z3.ArithRef, memo: dict) -> z3.ArithRef | None:
    step = simplify(value - header)
    if not mentions(step, header):
        return step
    if z3.is_app_of(value, z3.Z3_OP_ITE) and not mentions(value.arg(0), header):
        cond, then, other = value.children()
        for grown, kept, taken in ((then, other, cond), (other, then, z3.Not(cond))):
            if z3.is_add(grown) and any(c.eq(kept) for c in grown.children()):   # If(c, u + w, u) = u + If(c, w, 0)
                base = _sum_step(header, kept, memo)
                return None if base is None else base + z3.If(taken, z3.Sum(*_without(grown.children(), kept)), 0)
        then, other = _sum_step(header, then, memo), _sum_step(header, other, memo)
        return None if then is None or other is None else z3.If(cond, then, other)
    if z3.is_add(value):
        holding = [c for c in value.children() if mentions(c, header)]
        if len(holding) == 1:
            inner = _sum_step(header, holding[0], memo)
            rest = _without(value.children(), holding[0])
            return None if inner is None else z3.Sum(inner, *rest)
    return None


def _without(terms: list[z3.ExprRef], term: z3.ExprRef) -> list[z3.ExprRef]:
    """`terms` with one occurrence of `term` taken out."""
    at = next(n for n, t in enumerate(terms) if t.eq(term))
    return terms[:at] + terms[at + 1:]


def classify(header: z3.ArithRef, next_value: z3.ArithRef) -> Accumulator | None:
    step = _sum_step(header, next_value)
    if step is not None:
        return Accumulator("sum", header, step, next_value)
    step = _product_step(header, next_value)
    if step is not None:
        return Accumulator("prod", header, step, next_value)
    for kind, greater in (("max", True), ("min", False)):
        leaves = _leaves(next_value, greater)
        own = [leaf for leaf in leaves if z3.eq(leaf, header)]
        others = [leaf for leaf in leaves if not z3.eq(leaf, header)]
        if len(own) == 1 and others and not any(mentions(leaf, header) for leaf in others):
            combined = others[0]
            for leaf in others[1:]:
                keep = combined >= leaf if greater else combined <= leaf
                combined = z3.If(keep, combined, leaf)
            return Accumulator(kind, header, combined, next_value)
    return None


def at_iteration(acc: Accumulator, start: z3.ArithRef, count: z3.BitVecRef, step_at: z3.ArithRef,
                 k: z3.BitVecRef, bound_var: z3.BitVecRef, ran: bool = False) -> z3.ArithRef:
    """The register's value after `count` iterations: start ⊕ T(0) ⊕ … ⊕ T(count-1). `step_at` is T with
    the header symbols replaced by their values at iteration k; the comprehension binds `bound_var`. `ran`:
    the iterations counted include the one just executed (count ≥ 1: a path leaving after the body)."""
    body = z3.substitute(step_at, (k, bound_var))
    if acc.kind == "max" and neginf.mentions_neg_inf(start):
        return _max_from_neg_inf(start, count, bound_var, body, ran)
    if acc.kind == "sum":
        return start + sum_over(0, count, bound_var, body)
    if acc.kind == "prod":
        return start * prod_over(0, count, bound_var, body)
    if acc.kind == "max":
        return max_over(start, 0, count, bound_var, body)
    return min_over(start, 0, count, bound_var, body)


def _max_from_neg_inf(start: z3.ArithRef, count: z3.BitVecRef, j: z3.BitVecRef, body: z3.ArithRef,
                      ran: bool) -> z3.ArithRef:
    """A running max entered at -inf where c fails (start = If(c, v, -inf), or the bare marker: c false), e.g.
    CUDA's `float m = -INFINITY;`. On the extended reals max(-inf, x) = x, so after `count` iterations
    (c ∨ count ≠ 0): If(c, MaxFrom(v, 0, count, T), MaxFrom(T(0), 1, count, T)), the first iteration's term
    taking -inf's place; otherwise it is still -inf, which stays the marker (`neginf.join`). The marker is
    thus never inside a comprehension."""
    c, v = neginf.split(start, "a running max's start")
    first = z3.substitute(body, (j, z3.BitVecVal(0, j.size())))
    peeled = max_over(first, 1, count, j, body)
    value = peeled if z3.is_false(c) else z3.If(c, max_over(v, 0, count, j, body), peeled)
    return value if ran else neginf.join(z3.Or(c, count != 0), value)


def replay_max(acc: Accumulator, start: z3.ArithRef, where: str) -> z3.ArithRef:
    """One iteration of a max accumulator from a `start` that may hold the -inf marker, combined node by node
    as `max.f32` combines them (`neginf.binary` where an operand holds the marker): what a path leaving after
    the body holds, for `symexec` to recognise it."""
    def replay(term: z3.ExprRef) -> z3.ExprRef:
        if z3.eq(term, acc.header):
            return start
        if not is_extremum_node(term, True) or not mentions(term, acc.header):
            return term
        a, b = replay(term.arg(1)), replay(term.arg(2))
        if neginf.mentions_neg_inf(a) or neginf.mentions_neg_inf(b):
            return neginf.binary("max", a, b, _real_max, where)
        return _real_max(a, b)
    return replay(acc.next_value)


def _real_max(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)   # as `instructions.real_max` builds it


__all__ = ["Accumulator", "classify", "at_iteration", "SUM", "PROD", "MAX_FROM", "MIN_FROM"]
