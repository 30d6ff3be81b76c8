"""Arg-extremum loops: a (value, index) pair carried through a loop and replaced together on a comparison.

`if (v > best) { best = v; arg = m; }` compiles to two selections on one predicate: from one generic run of
the body (every carried register a fresh header symbol b, a), the back edge gives

    b' = If(T > b, T, b)        a' = If(T > b, I, a)

with T and I free of b and a, and I an induction term: at iteration k it is base + k with base free of k
(the loop counter, `arg = m`). Then at the start of iteration k

    b = MaxFrom(b₀, 0, k, λt. T(t))        a = ArgMaxFrom(b₀, a₀, base, k, λt. T(t))

exactly (`semantics.arg_extrema`): by induction on k. At k = 0 both folds are empty and give (b₀, a₀). If
they hold at k, the back edge gives b' = If(T(k) > b, T(k), b) = max(b, T(k)) (reals: no NaN), which is
MaxFrom over [0, k+1), and a' = If(T(k) > b, base + k, a), which is the fold's step at t = k with the fold's
value component b: ArgMaxFrom over [0, k+1). The comparison names the kind (`COMPARISONS`): > is argmax,
< argmin, ≥ and ≤ their last-index-on-ties twins; the value register is then the max (min) accumulator of
`semantics.ptx.accumulators` with step T.

A loop nvcc unrolled d times chains d such selections, lane l comparing T_l with the value b_l the lanes
before it left (b_0 = b, b_{l+1} = If(T_l > b_l, T_l, b_l)), the index chain selected on those very
comparisons: a_{l+1} = If(T_l > b_l, I_l, a_l). With every I_l(k) = base + d·k + l (one base, free of k)
this is the d-lane fold ArgMaxFrom_d(b₀, a₀, base, k, T_0, …, T_{d-1}), whose positions d·t + l run the
lanes in turn (the same induction, one lane at a time within an iteration), and b is MaxFrom(b₀, 0, k,
max(T_0, …, T_{d-1})). Any other shape of a carried integer is not summarised here (the caller refuses it),
nor a pair whose value starts at the -inf padding marker (`neginf`), nor an index that is not its position
plus a constant (nvcc's sign-extended 32-bit `m + l`). An index register of w < 64 bits (`int arg`) holds
the low w bits of the 64-bit fold of its widened start and base: addition modulo 2^w only reads low bits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import z3

from semantics.arg_extrema import KINDS, MAX_LANES, arg_over
from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.accumulators import Accumulator
from semantics.ptx.accumulators import at_iteration as value_at_iteration
from semantics.ptx.machine import simplify
from semantics.terms import mentions

if TYPE_CHECKING:
    from semantics.ptx.state import ThreadState

# "T op b" -> the fold; a negation flips the comparison, and b op T mirrors it
COMPARISONS = {z3.Z3_OP_GT: "argmax", z3.Z3_OP_GE: "argmax_last", z3.Z3_OP_LT: "argmin", z3.Z3_OP_LE: "argmin_last"}
NEGATED = {z3.Z3_OP_GT: z3.Z3_OP_LE, z3.Z3_OP_LE: z3.Z3_OP_GT, z3.Z3_OP_GE: z3.Z3_OP_LT, z3.Z3_OP_LT: z3.Z3_OP_GE}
MIRRORED = {z3.Z3_OP_GT: z3.Z3_OP_LT, z3.Z3_OP_LT: z3.Z3_OP_GT, z3.Z3_OP_GE: z3.Z3_OP_LE, z3.Z3_OP_LE: z3.Z3_OP_GE}
VALUE_KIND = {"argmax": "max", "argmax_last": "max", "argmin": "min", "argmin_last": "min"}


@dataclass(frozen=True)
class ArgAccumulator:
    kind: str                          # a key of semantics.arg_extrema.KINDS
    header: z3.BitVecRef               # the generic run's symbol for the index register
    value_reg: str                     # the register holding the pair's value
    steps: tuple[z3.ArithRef, ...]     # T_l: the values one iteration compares in turn (its lanes), over the
    indices: tuple[z3.BitVecRef, ...]  # generic run's header symbols; I_l: the indices they record
    next_value: z3.BitVecRef           # the index register's back-edge value in the generic run

    def terms(self) -> tuple[z3.ExprRef, ...]:
        return (*self.steps, *self.indices)


def _selected(next_value: z3.ExprRef, header: z3.ExprRef) -> tuple[z3.BoolRef, z3.ExprRef] | None:
    """(c, x) when next_value = If(c, x, header), the header kept unless c."""
    if not z3.is_app_of(next_value, z3.Z3_OP_ITE):
        return None
    cond, then, other = next_value.children()
    if z3.eq(other, header) and not z3.eq(then, header):
        return cond, then
    if z3.eq(then, header) and not z3.eq(other, header):
        return z3.Not(cond), other
    return None


def _comparison(cond: z3.BoolRef, value_header: z3.ArithRef) -> tuple[str, z3.ArithRef] | None:
    """(kind, T) when cond is `T op b` over reals for b the value's header symbol (negations and mirrored
    operands read off)."""
    negations = 0
    while z3.is_not(cond):
        cond, negations = cond.arg(0), negations + 1
    if not z3.is_app(cond) or cond.decl().kind() not in COMPARISONS or not z3.is_real(cond.arg(0)):
        return None
    op, (lhs, rhs) = cond.decl().kind(), cond.children()
    if negations % 2:
        op = NEGATED[op]
    if z3.eq(lhs, value_header) and not z3.eq(rhs, value_header):
        op, lhs, rhs = MIRRORED[op], rhs, lhs
    if not z3.eq(rhs, value_header) or mentions(lhs, value_header):
        return None
    return COMPARISONS[op], lhs


def _value_chain(value: z3.ExprRef, header: z3.ArithRef) -> list[tuple[str, z3.ArithRef, z3.ArithRef]] | None:
    """[(kind, T_l, b_l)] first lane first when value = b_d with b_{l+1} = If(T_l op b_l, T_l, b_l), b_0 the
    header and every T_l free of it (an unrolled `if (v > best) best = v;`)."""
    chain = []
    while not z3.eq(value, header):
        if not z3.is_app_of(value, z3.Z3_OP_ITE) or len(chain) == MAX_LANES:
            return None
        cond, then, other = value.children()
        for taken, kept, selects in ((then, other, cond), (other, then, z3.Not(cond))):
            compared = _comparison(selects, kept)
            if compared is not None and z3.eq(compared[1], taken) and not mentions(taken, header):
                chain.append((compared[0], taken, kept))
                value = kept
                break
        else:
            return None
    return chain[::-1]


def _index_chain(index: z3.ExprRef, header: z3.BitVecRef) -> list[tuple[z3.BoolRef, z3.BitVecRef]] | None:
    """[(c_l, I_l)] first lane first when index = If(c_d, I_d, … If(c_1, I_1, header)) (either branch order),
    every I_l free of the header."""
    chain = []
    while not z3.eq(index, header):
        if not z3.is_app_of(index, z3.Z3_OP_ITE) or len(chain) == MAX_LANES:
            return None
        cond, then, other = index.children()
        if mentions(other, header) and not mentions(then, header):
            chain.append((cond, then))
            index = other
        elif mentions(then, header) and not mentions(other, header):
            chain.append((z3.Not(cond), other))
            index = then
        else:
            return None
    return chain[::-1]


def classify(header: z3.BitVecRef, next_value: z3.ExprRef, values: dict[str, tuple[z3.ArithRef, z3.ExprRef]]
             ) -> tuple[ArgAccumulator, Accumulator] | None:
    """The index register's summary and its value register's, when the back edge selects both, lane by
    lane, on one comparison of the lane's value with the value register's value before it (`values`: each
    carried real register's header symbol and back-edge value), of one kind in every lane."""
    indices = _index_chain(next_value, header)
    if not indices:
        return None
    for reg, (value_header, value_next) in sorted(values.items()):
        chain = _value_chain(value_next, value_header)
        if chain is None or len(chain) != len(indices) or len({kind for kind, _, _ in chain}) != 1:
            continue
        if all(_same_comparison(_comparison(cond, before), kind, step) and not mentions(index, value_header)
               and not mentions(step, header)
               for (cond, index), (kind, step, before) in zip(indices, chain, strict=True)):
            steps = tuple(step for _, step, _ in chain)
            kind = chain[0][0]
            return (ArgAccumulator(kind, header, reg, steps, tuple(i for _, i in indices), next_value),
                    Accumulator(VALUE_KIND[kind], value_header, _extremum(steps, VALUE_KIND[kind]), value_next))
    return None


def _extremum(steps: tuple[z3.ArithRef, ...], kind: str) -> z3.ArithRef:
    """max (min) of the lanes as `accumulators.classify` builds a max tree's step: one iteration's b' is
    max(b, T_0, …, T_{d-1}) whatever the comparisons (>, ≥) that chose along the way."""
    combined = steps[0]
    for leaf in steps[1:]:
        combined = z3.If(combined >= leaf if kind == "max" else combined <= leaf, combined, leaf)
    return combined


def _same_comparison(found: tuple[str, z3.ArithRef] | None, kind: str, step: z3.ArithRef) -> bool:
    return found is not None and found[0] == kind and z3.eq(found[1], step)


def at_iteration(acc: ArgAccumulator, start: z3.BitVecRef, value_start: z3.ArithRef, count: z3.BitVecRef,
                 steps_at: tuple[z3.ArithRef, ...], indices_at: tuple[z3.BitVecRef, ...], k: z3.BitVecRef,
                 bound_var: z3.BitVecRef, where: str) -> z3.BitVecRef:
    """The index register after `count` iterations: the d-lane fold ArgFrom(value₀, index₀, base, count,
    λt. T_0(t), …, λt. T_{d-1}(t)), with `steps_at`/`indices_at` the T_l and I_l at iteration k (header
    symbols replaced by their values there), each I_l proved to be base + d·k + l with one base free of k."""
    if neginf.mentions_neg_inf(value_start):
        raise Unsupported("an arg-extremum loop whose value starts at -inf (a padded lane)", where)
    width = start.size()
    if width > 64 or any(i.size() != width for i in indices_at):
        raise Unsupported(f"an arg-extremum index register of {width} bits", where)
    lanes, kw = len(steps_at), k if width == 64 else z3.Extract(width - 1, 0, k)
    bases = [simplify(index - lanes * kw - lane) for lane, index in enumerate(indices_at)]
    if any(mentions(b, k) or not z3.eq(b, bases[0]) for b in bases):
        raise Unsupported("an arg-extremum loop whose recorded index is not its position plus a constant", where)
    fold = arg_over(acc.kind, value_start, _widened(start), _widened(bases[0]), count, bound_var,
                    *[z3.substitute(step, (k, bound_var)) for step in steps_at])
    return fold if width == 64 else z3.Extract(width - 1, 0, fold)


def _widened(term: z3.BitVecRef) -> z3.BitVecRef:
    """A narrower index register's value as a 64-bit fold argument. Its low bits are all a narrow register
    reads back (the fold is taken modulo 2^w, `at_iteration`): the low w bits of base + p depend only on
    the low w bits of base, so Extract(w-1, 0, fold) is the w-bit register's value exactly, whatever 64-bit
    term with those low bits stands for it: the low bits of an earlier fold (a remainder loop's start)
    stand as that fold, which the matcher can then split off."""
    if term.size() == 64:
        return term
    if z3.is_app_of(term, z3.Z3_OP_EXTRACT) and term.params() == [term.size() - 1, 0] and term.arg(0).size() == 64:
        return term.arg(0)
    return z3.ZeroExt(64 - term.size(), term)


def classify_all(registers: list[str], symbols: dict, nexts: list[dict], reals: list[str]
                 ) -> dict[str, tuple[ArgAccumulator, Accumulator]]:
    """The registers (carried integers) every back edge of the generic run summarises alike as an index
    register paired with one of the carried `reals`; the others are left out (the caller refuses them)."""
    found = {}
    for r in registers:
        pairs = [classify(symbols[r], n[r], {b: (symbols[b], n[b]) for b in reals if b in n}) for n in nexts if r in n]
        if pairs and all(p is not None for p in pairs) and all(_alike(p, pairs[0]) for p in pairs):
            found[r] = pairs[0]
    return found


def _alike(a: tuple[ArgAccumulator, Accumulator], b: tuple[ArgAccumulator, Accumulator]) -> bool:
    return a[0].kind == b[0].kind and a[0].value_reg == b[0].value_reg and len(a[0].terms()) == len(b[0].terms()) \
        and all(z3.eq(x, y) for x, y in zip(a[0].terms(), b[0].terms(), strict=True))


def one_more(acc: ArgAccumulator, start: z3.BitVecRef, value_header: z3.ArithRef, value_start: z3.ArithRef,
             at_k: list) -> z3.BitVecRef:
    """The back edge's index from the state at the start of an iteration: what a path leaving after the body
    holds (`symexec` then summarises it over one iteration more)."""
    return z3.substitute(acc.next_value, (acc.header, start), (value_header, value_start), *at_k)


@dataclass(frozen=True)
class Summary:
    """An index register in one loop: its accumulator, the T_l and I_l at iteration k, the fold's bound
    variable."""

    acc: ArgAccumulator
    steps_k: tuple[z3.ArithRef, ...]
    indices_k: tuple[z3.BitVecRef, ...]
    bound_var: z3.BitVecRef


def summary(acc: ArgAccumulator, header: str, at_k: list) -> Summary:
    """`acc` at iteration k (`at_k`: the induction header symbols' values there)."""
    def at(term: z3.ExprRef) -> z3.ExprRef:
        return z3.substitute(term, *at_k) if at_k else term
    return Summary(acc, tuple(map(at, acc.steps)), tuple(map(at, acc.indices)),
                   z3.BitVec(f"t.{header}.{acc.header}", 64))


def fold_at(s: Summary, entry: ThreadState, reg: str, count: z3.BitVecRef, k: z3.BitVecRef, where: str
            ) -> z3.BitVecRef:
    """The index register `reg` after `count` iterations from the loop's entry state."""
    return at_iteration(s.acc, entry.regs[reg], entry.regs[s.acc.value_reg], count, s.steps_k, s.indices_k, k,
                        s.bound_var, where)


def finish(state: ThreadState, entry: ThreadState, summaries: dict, arg_summaries: dict[str, Summary], at_k: list,
           k: z3.BitVecRef, where: str, same: Callable[[z3.ExprRef, z3.ExprRef], bool]) -> None:
    """On a path leaving the loop at iteration k (before the value registers are finished, `symexec`): an
    index register holds the fold over k iterations, or over k+1 when the path leaves after the body (its
    value is the back edge's from the state at the start of iteration k); anything else is refused."""
    for r, s in arg_summaries.items():
        value_acc, value_step, value_j = summaries[s.acc.value_reg]
        value = state.regs.get(r)
        if value is None or same(value, fold_at(s, entry, r, k, k, where)):
            continue
        value_start = value_at_iteration(value_acc, entry.regs[s.acc.value_reg], k, value_step, k, value_j)
        if not same(value, one_more(s.acc, fold_at(s, entry, r, k, k, where), value_acc.header, value_start, at_k)):
            raise Unsupported(f"the index left in {r} by the {where} is not the fold's", where)
        state.regs[r] = fold_at(s, entry, r, k + 1, k, where)


__all__ = ["ArgAccumulator", "Summary", "classify", "classify_all", "summary", "fold_at", "finish", "KINDS"]
