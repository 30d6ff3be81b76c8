"""Online sums: a float register rescaled by exp(m_old − m_new) each time a running max m grows.

Online softmax (the loop at the heart of flash attention) keeps, in one pass, the running max m and the sum
s of exp(x − m) so far: `m_new = max(m, v); s = s·exp(m − m_new) + exp(v − m_new); m = m_new`, unrolled or
not. In the generic run of the loop body (header symbols S for s, M for m) the back-edge value G of s is
*rebased*:

    G = S·exp(M − M') + Σ_l exp(a_l − M')                                                        (step)

with M' the back-edge value of m (a max accumulator, `semantics.ptx.accumulators`) and each a_l free of every
carried register (the iteration's data: x at that iteration's indices). (step) is a theorem of the proof
kernel: the tactic `semantics.ptx.exp_monomials` expands G into monomials, `semantics.proof.exps.exp_product`
states exp(u_1)·…·exp(u_n) = exp(u_1 + … + u_n) for each (axiom exp.add), and `by_smt` proves the rest (a
ring identity). With E_j(μ) = Σ_l exp(a_l(j) − μ) (a_l at iteration j), the register then holds, at the
start of iteration k (m_k the max register's value there, finite for k ≥ 1):

    s_k = s_0·exp(m_0 − m_k) + Σ_{j<k} E_j(m_k)        (m_0 finite)
    s_k = Σ_{j<k} E_j(m_k)                             (m_0 = -inf and s_0 = 0: CUDA's `m = -INFINITY, s = 0`)

Proof, by induction on k. k = 0: the empty sum, and exp(m_0 − m_0) = 1. Step k → k+1 (m_k finite): the
machine computes s_{k+1} = G[S := s_k, M := m_k] = s_k·exp(m_k − m_{k+1}) + E_k(m_{k+1}) by (step), which
holds for every real S and M; and E_j(μ)·exp(μ − μ') = E_j(μ') term by term by exp.add (likewise
s_0·exp(m_0 − m_k)·exp(m_k − m_{k+1}) = s_0·exp(m_0 − m_{k+1})), so s_{k+1} is the formula at k+1. The step 0 → 1
from m_0 = -inf is not an instance of (step) (-inf is not a real): the first iteration's value is taken from
the real pass at k = 0, where the -inf rules of `semantics.ptx.neginf` (exp(-inf) = +0 among them) computed
it, and s_1 = E_0(m_1) is proved of it the same way (`first_step`), for every back edge and exit.

`rebase`: a start s_0 that is itself such a sum in m_0 (every m_0 in it as exp(a − m_0), a free of m_0, under
sums and Sum comprehensions: the sum a previous loop left) is carried to m_k by substitution, since
exp(a − m_0)·exp(m_0 − m_k) = exp(a − m_k) (exp.add); any other start keeps the factor exp(m_0 − m_k).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import z3

from semantics.axioms import ideal
from semantics.comprehension import SUM, sum_over, without_empty
from semantics.errors import Unsupported
from semantics.ptx import exp_monomials, neginf
from semantics.ptx.accumulators import Accumulator, at_iteration
from semantics.ptx.accumulators import classify as classify_accumulator
from semantics.ptx.machine import Pointer, simplify
from semantics.ptx.state import ThreadState
from semantics.terms import mentions

AXIOMS = ("exp.add",)


@dataclass(frozen=True)
class OnlineSum:
    header: z3.ArithRef                 # S: the generic run's symbol for the register at the loop header
    max_reg: str                        # the register of the running max m
    max_header: z3.ArithRef             # M
    terms: tuple[z3.ArithRef, ...]      # a_l, over the generic run's symbols
    next_value: z3.ArithRef             # G: the back-edge value


def classify(header: z3.ArithRef, nexts: list[z3.ArithRef], max_reg: str, max_acc: Accumulator,
             carried: list[z3.ExprRef], where: str) -> OnlineSum | None:
    """The online sum whose step (the module's (step)) the kernel proves of every back-edge value `nexts`,
    rebased on the max accumulator `max_acc`; None when there is none. `carried`: the generic run's symbols of
    every carried register that is not an induction variable (no a_l may mention one)."""
    if not nexts or any(not z3.eq(n, nexts[0]) for n in nexts):
        return None
    value, mu = nexts[0], max_acc.next_value
    pairs = exp_monomials.rebased(value, mu)
    if pairs is None:
        return None
    scaled = [a for c, a in pairs if z3.eq(c, header)]
    terms = tuple(a for c, a in pairs if z3.eq(c, z3.RealVal(1)))
    if len(scaled) != 1 or not z3.eq(scaled[0], max_acc.header) or len(terms) + 1 != len(pairs) or not terms:
        return None
    if any(mentions(a, h) for a in terms for h in carried):
        return None
    claimed = header * ideal("exp")(max_acc.header - mu) + _sum(terms, mu)
    theorem = exp_monomials.prove_rebased(value, claimed, f"online sum step ({where})")
    if theorem is None or not theorem.states(value == claimed):
        return None
    return OnlineSum(header, max_reg, max_acc.header, terms, value)


def _sum(terms: tuple[z3.ArithRef, ...] | list[z3.ArithRef], mu: z3.ArithRef) -> z3.ArithRef:
    """E(μ) = Σ_l exp(a_l − μ)."""
    exp = ideal("exp")
    return z3.Sum(*[exp(a - mu) for a in terms])


def step_at(online: OnlineSum, at_k: list) -> tuple[z3.ArithRef, ...]:
    """The a_l at iteration k (the generic run's induction symbols replaced by their values there)."""
    return tuple(z3.substitute(a, *at_k) if at_k else a for a in online.terms)


def max_at(max_acc: Accumulator, max_start: z3.ArithRef, count, max_step_k: z3.ArithRef, k: z3.BitVecRef,
           j: z3.BitVecRef) -> z3.ArithRef:
    """m after `count` iterations as a real: from -inf, the max of the iterations that ran (count ≥ 1)."""
    return at_iteration(max_acc, max_start, count, max_step_k, k, j, ran=True)


def value_at(online: OnlineSum, start: z3.ArithRef, max_start: z3.ArithRef, mu: z3.ArithRef,
             terms_k: tuple[z3.ArithRef, ...], count, k: z3.BitVecRef, j: z3.BitVecRef) -> z3.ArithRef | None:
    """s after `count` iterations, the max there being μ (`max_at`); None for a start outside the theorem (from
    -inf, a sum that is not 0)."""
    mark = z3.Real(f"mu!{online.header}")
    body = z3.substitute(z3.substitute(_sum(terms_k, mark), (k, j)), (mark, mu))
    total = sum_over(0, count, j, body)
    if neginf.mentions_neg_inf(max_start):
        if not (z3.is_rational_value(start) and start.as_fraction() == 0 and z3.eq(max_start, neginf.NEG_INF)):
            return None
        return total
    return rebase(start, max_start, mu) + total


def rebase(start: z3.ArithRef, m0: z3.ArithRef, mu: z3.ArithRef) -> z3.ArithRef:
    """start·exp(m0 − μ), written without the factor where `start` is a sum in m0 (the module's `rebase`)."""
    if z3.is_rational_value(start) and start.as_fraction() == 0:
        return start
    if _in_base(start, m0):
        return z3.substitute(start, (m0, mu))
    return start * ideal("exp")(m0 - mu)


def _in_base(term: z3.ExprRef, m0: z3.ArithRef) -> bool:
    """`term` is a sum of exp(a − m0) with a free of m0, through +, Sum comprehensions (bounds free of m0)."""
    if z3.is_app_of(term, z3.Z3_OP_ADD):
        return all(_in_base(c, m0) for c in term.children())
    if z3.is_app(term) and term.decl() == SUM:
        lo, hi, body = term.children()
        return (not mentions(lo, m0) and not mentions(hi, m0) and z3.is_quantifier(body)
                and _in_base(body.body(), m0))
    if z3.is_app(term) and term.num_args() == 1 and term.decl() == ideal("exp"):
        arg = term.arg(0)
        return (z3.is_app_of(arg, z3.Z3_OP_SUB) and arg.num_args() == 2 and z3.eq(arg.arg(1), m0)
                and not mentions(arg.arg(0), m0))
    return False


def first_step(value: z3.ArithRef, terms_k: tuple[z3.ArithRef, ...], max_step_k: z3.ArithRef,
               k: z3.BitVecRef, where: str) -> bool:
    """From m_0 = -inf, s_0 = 0: the value the real pass computed for one iteration, at k = 0, is E_0(m_1) with
    m_1 = T(0) (the max accumulator's step at iteration 0), proved by the kernel (`exp_monomials`)."""
    zero = z3.BitVecVal(0, k.size())
    at_zero = z3.simplify(z3.substitute(value, (k, zero)), elim_sign_ext=False)
    if neginf.mentions_neg_inf(at_zero):
        return False
    m1 = z3.substitute(max_step_k, (k, zero))
    claimed = _sum([z3.substitute(a, (k, zero)) for a in terms_k], m1)
    theorem = exp_monomials.prove_rebased(at_zero, claimed, f"online sum first step ({where})")
    return theorem is not None and theorem.states(at_zero == claimed)


def classify_all(accumulators: dict, symbols: dict, nexts: list[dict], carried: list[z3.ExprRef],
                 where: str) -> None:
    """Replace, in `accumulators`, each carried float left unsummarised (a reason string) by the online sum it
    is over one of the loop's max accumulators, where the kernel proves its step, or else by the sum whose step
    reads only such maxes (`Accumulator.depends`)."""
    maxes = {r: a for r, a in accumulators.items() if isinstance(a, Accumulator) and a.kind == "max"}
    for r, found in list(accumulators.items()):
        if not isinstance(found, str) or not z3.is_real(symbols.get(r, z3.BoolVal(True))):
            continue
        values = [n[r] for n in nexts if r in n]
        for max_reg, max_acc in maxes.items():
            online = classify(symbols[r], values, max_reg, max_acc, carried, where)
            if online is not None:
                accumulators[r] = online
                break
        else:
            dependent = _dependent_sum(symbols[r], values, [a.header for a in maxes.values()], carried)
            if dependent is not None:
                accumulators[r] = dependent


def _dependent_sum(header: z3.ArithRef, values: list[z3.ArithRef], max_headers: list[z3.ArithRef],
                   carried: list[z3.ExprRef]) -> Accumulator | None:
    """The sum accumulator of `values` whose step reads, of the carried registers, only the loop's maxes."""
    found = [classify_accumulator(header, v) for v in values]
    if not found or any(f is None or f.kind != "sum" or not z3.eq(f.step, found[0].step) for f in found):
        return None
    used = [h for h in carried if mentions(found[0].step, h)]
    if not used or not all(any(z3.eq(h, m) for m in max_headers) for h in used):
        return None
    return dataclasses.replace(found[0], depends=tuple(used))



# ---------------------------------------------------------------------------------------------- in a loop summary
# The executor's use of the above (`semantics.ptx.symexec.Executor._loop`): the online sums at iteration k of the
# real pass, their first step from -inf, the sums that read a running max, and what a path leaving the loop holds.
# `same(a, b)` is the executor's proof that two terms are equal for all values of their symbols.


def maxes_at(entry: ThreadState, accumulators: dict, at_k: list, k: z3.BitVecRef, header: str) -> list:
    """(header symbol, value at iteration k) of each max accumulator: what a dependent sum's step reads
    (`Accumulator.depends`). Built as the max's own summary builds it, so the terms are the same. From -inf,
    the max over the iterations that ran (k ≥ 1; at k = 0 the register is -inf, and the sum's first step is
    checked against the real pass instead: `check_dependent_first_steps`)."""
    pairs = []
    for r, acc in sorted((r, a) for r, a in accumulators.items() if isinstance(a, Accumulator) and a.kind == "max"):
        start = entry.regs.get(r)
        if start is None or isinstance(start, Pointer) or (neginf.mentions_neg_inf(start)
                                                            and not z3.eq(start, neginf.NEG_INF)):
            continue
        step_k = z3.substitute(acc.step, *at_k) if at_k else acc.step
        j = z3.BitVec(f"j.{header}.{r}", 64)
        pairs.append((acc.header, at_iteration(acc, start, k, step_k, k, j, ran=True)))
    return pairs


def start(body_state: ThreadState, entry: ThreadState, accumulators: dict, summaries: dict, at_k: list, k,
          header: str, where: str) -> dict:
    """Each online sum at iteration k in the loop body's state, from the summary of the max it is rebased on; one
    whose start is outside the theorem is opaque. Returns register -> (sum, its a_l at k, bound variable)."""
    online = {}
    for r, o in sorted((r, a) for r, a in accumulators.items() if isinstance(a, OnlineSum)):
        if o.max_reg not in summaries or r not in entry.regs:
            body_state.regs[r] = body_state.opaque(entry.regs.get(r, z3.RealVal(0)), f"the value carried in {r}")
            continue
        max_acc, max_step_k, jm = summaries[o.max_reg]
        terms_k = step_at(o, at_k)
        j = z3.BitVec(f"j.{header}.{r}", 64)
        mu = max_at(max_acc, entry.regs[o.max_reg], k, max_step_k, k, jm)
        value = value_at(o, entry.regs[r], entry.regs[o.max_reg], mu, terms_k, k, k, j)
        if value is None:
            body_state.regs[r] = body_state.opaque(entry.regs[r], f"the value carried in {r} by the {where} (an "
                                                   "online sum from -inf that does not start at 0)")
            continue
        body_state.use_axiom("exp.add")
        body_state.regs[r] = value
        online[r] = (o, terms_k, j)
    return online


def check_first_steps(online: dict, back_states: list, entry: ThreadState, summaries: dict, k, where: str) -> None:
    """From m = -inf, the first iteration's value on every back edge is proved (`first_step`)."""
    for r, (o, terms_k, _) in online.items():
        if not neginf.mentions_neg_inf(entry.regs[o.max_reg]):
            continue
        max_step_k = summaries[o.max_reg][1]
        if not all(first_step(s.regs[r], terms_k, max_step_k, k, where) for s in back_states):
            raise Unsupported(f"the online sum in {r}: its first iteration from -inf is not proved", where)


def check_dependent_first_steps(summaries: dict, back_states: list, entry: ThreadState, k, where: str,
                                same: Callable) -> None:
    """A sum reading a running max that starts at -inf (`Accumulator.depends`) is summarised with the max over
    the iterations that ran in place of -inf at iteration 0 too: that is its value only where the real pass,
    which computed iteration 0 from -inf by `neginf`'s rules, holds the same after it on every back edge (the
    solver's proof at k = 0)."""
    zero = z3.BitVecVal(0, 64)
    maxes = [(r, a) for r, (a, _, _) in summaries.items() if a.kind == "max"]
    for r, (acc, step_k, _) in summaries.items():
        if not acc.depends or not any(neginf.mentions_neg_inf(entry.regs.get(m, z3.RealVal(0))) for m, a in maxes
                                      if any(z3.eq(a.header, d) for d in acc.depends)):
            continue
        expected = simplify(without_empty(simplify(entry.regs[r] + z3.substitute(step_k, (k, zero)))))
        for b in back_states:
            got = simplify(without_empty(simplify(z3.substitute(b.regs[r], (k, zero)))))
            if neginf.mentions_neg_inf(got) or not same(got, expected):
                raise Unsupported(f"the sum in {r} reads a running max from -inf: its first iteration is not the "
                                  "step's value", where)


def finish(s: ThreadState, entry: ThreadState, online: dict, summaries: dict, at_k: list, k, back_states: list,
           where: str, same: Callable) -> None:
    """On a path leaving the loop at iteration k, an online sum holds its value at k, or its value at k+1 where it
    holds what a back edge of the same iteration holds (the machine's value after one more body, which the
    induction proved; for a start at a real max also where the solver proves it the step from k). Anything
    else is opaque."""
    for r, (o, terms_k, j) in online.items():
        max_acc, max_step_k, jm = summaries[o.max_reg]
        m0, s0 = entry.regs[o.max_reg], entry.regs[r]
        mu = max_at(max_acc, m0, k, max_step_k, k, jm)
        begin = value_at(o, s0, m0, mu, terms_k, k, k, j)
        value = s.regs.get(r)
        if value is None or same(value, begin):
            continue
        after_body = any(z3.eq(value, b.regs.get(r, begin)) for b in back_states)
        if not after_body and not neginf.mentions_neg_inf(m0):
            after_body = same(value, z3.substitute(o.next_value, (o.header, begin), (o.max_header, mu), *at_k))
        if after_body:
            mu_next = max_at(max_acc, m0, k + 1, max_step_k, k, jm)
            replace_copies(s, value, value_at(o, s0, m0, mu_next, terms_k, k + 1, k, j))
        else:
            s.regs[r] = s.opaque(value, f"the value left in {r} by the {where}")


def replace_copies(state: ThreadState, old: z3.ExprRef, new: z3.ExprRef) -> None:
    """Every register holding the term `old` now holds `new`, an equal value in another form (an accumulator's
    closed form after one more iteration): nvcc keeps `m_new = fmaxf(m, v)` live after the loop in a register of
    its own, which must read as the same value as the carried one."""
    for r, v in state.regs.items():
        if isinstance(v, z3.ExprRef) and z3.eq(v, old):
            state.regs[r] = new
