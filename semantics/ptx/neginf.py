"""`-inf` paddings: a lane loaded with `other=-inf` carried as If(c, v, NEG_INF) through the few float
operations whose IEEE-754 result at -inf is exact and known.

Floats are reals (DESIGN §3) and -inf is not one, so `NEG_INF` is a marker, never a value: a register may hold
If(c, v, NEG_INF) — "v where c holds, -inf elsewhere" — with v a real term free of the marker (a finite float:
the model has no overflow), or the bare marker. Every float instruction that meets the marker comes here
(`binary`, `unary`); each rule below is an IEEE-754 fact for finite `a`, a constant `k > 0` and non-NaN values
(PTX ISA: `max`/`min` return the non-NaN operand; `ex2.approx.f32` maps -Inf to +0.0, PTX ISA 9.7.3 `ex2`):

  sub   If(c,v,-inf) - a         = If(c, v - a, -inf)               (-inf) - a = -inf
  add   If(c,v,-inf) + a         = If(c, v + a, -inf)               (-inf) + a = -inf (either order)
  mul   If(c,v,-inf) · k         = If(c, v · k, -inf)               (-inf) · k = -inf (either order)
  ex2   ex2(If(c,v,-inf))        = If(c, ex2(v), 0)                 ex2(-inf) = +0
  exp   exp(If(c,v,-inf))        = If(c, exp(v), 0)                 expf(-inf) = +0 (the nvcc expf sequence,
                                                                    `lark.ideal.exp`: its cvt.sat clamps the
                                                                    reduced -inf to 0, ex2.approx(-inf) = +0)
  max   max(If(c,v,-inf), a)     = max(a, If(c, v, a))              max(-inf, a) = a = max(a, a)
  max   max(If(c1,v1,-inf), If(c2,v2,-inf))
                                 = If(c1 ∨ c2, max(If(c1,v1,v2), If(c2,v2,v1)), -inf)
  min   min(If(c,v,-inf), a)     = If(c, min(v, a), -inf)           min(-inf, a) = -inf

A rule's result holds the marker at most as the else branch of its top-level If, so no arithmetic is ever
built over the marker: anything else that meets it (a subtraction of a padded value from another, a division,
a comparison, a store that may store it, a marker under an operator) raises `Unsupported` naming -inf. Where
the thread's launch ranges and path prove a guard c always true, If(c, v, -inf) is just v (`settle`): the
proof is one small solver query about integers, the marker does not take part in it. `mentions_neg_inf`
lets the verdict refuse any obligation that still holds the marker (it must not reach a solver as a real).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from semantics import purify
from semantics.errors import Unsupported

if TYPE_CHECKING:
    from semantics.ptx.state import ThreadState

NEG_INF = z3.Real("-inf!")
NEG_INF_BITS = {16: 0xFC00, 32: 0xFF800000, 64: 0xFFF0000000000000}
SETTLE_TIMEOUT_MS = 2000
STORE_SETTLE_TIMEOUT_MS = 15000   # once per store site: the last chance before -inf is refused there


_PROBE = z3.Real("-inf!probe")


def mentions_neg_inf(term: z3.ExprRef) -> bool:
    """Whether the marker occurs in `term`: replacing it changes the term exactly when it occurs (one pass in
    z3's own code; the verdict asks this of every obligation, some of them large)."""
    return not z3.substitute(term, (NEG_INF, _PROBE)).eq(term)


class Marks:
    """Which terms hold the marker, memoised by node id over one symbolic execution: every float instruction
    asks of its operands, and the operands of a reduction tree share most of their nodes."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[z3.ExprRef, bool]] = {}   # the term is kept so that its id is not reused

    def __call__(self, term: z3.ExprRef) -> bool:
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in self.memo:
                continue
            kids = [] if z3.is_quantifier(t) or not z3.is_app(t) else t.children()
            if z3.is_quantifier(t):
                kids = [t.body()]
            if not expanded and any(k.get_id() not in self.memo for k in kids):
                stack.append((t, True))
                stack.extend((k, False) for k in kids if k.get_id() not in self.memo)
                continue
            self.memo[t.get_id()] = (t, z3.eq(t, NEG_INF) or any(self.memo[k.get_id()][1] for k in kids))
        return self.memo[term.get_id()][1]


_MARKS = Marks()   # for callers without an execution of their own (tests)


def _is_marker(term: z3.ExprRef) -> bool:
    return z3.eq(term, NEG_INF)


def split(term: z3.ExprRef, what: str, marks: Marks = _MARKS) -> tuple[z3.BoolRef, z3.ArithRef]:
    """(c, v) with term = If(c, v, -inf) and v free of the marker; `Unsupported` when the marker sits anywhere
    else (it would have to be an operand of arithmetic). A value without the marker is (True, itself); an If
    between guarded values is one guarded value (the IEEE value is picked the same way)."""
    if _is_marker(term):
        return z3.BoolVal(False), z3.RealVal(0)
    if not marks(term):
        return z3.BoolVal(True), term
    if z3.is_app_of(term, z3.Z3_OP_ITE):
        cond, a, b = term.children()
        if not marks(cond):
            ca, va = split(a, what, marks)
            cb, vb = split(b, what, marks)
            if z3.is_false(cb):     # If(cond, If(ca, va, -inf), -inf): a masked load's register
                return _simple(z3.And(cond, ca)), va
            if z3.is_false(ca):
                return _simple(z3.And(z3.Not(cond), cb)), vb
            return _simple(z3.If(cond, ca, cb)), z3.If(cond, va, vb)
    raise Unsupported(f"-inf (a masked lane's padding) reaches {what}")


def join(cond: z3.BoolRef, value: z3.ArithRef) -> z3.ArithRef:
    """If(cond, value, -inf), without the If when cond is trivially true or false."""
    cond = _simple(cond)
    if z3.is_true(cond):
        return value
    if z3.is_false(cond):
        return NEG_INF
    return z3.If(cond, value, NEG_INF)


def _simple(cond: z3.BoolRef) -> z3.BoolRef:
    return z3.simplify(cond, elim_sign_ext=False)


def _positive_constant(term: z3.ArithRef) -> bool:
    return z3.is_rational_value(term) and term.as_fraction() > 0


def binary(opcode: str, a: z3.ArithRef, b: z3.ArithRef, real_op, where: str,
           marks: Marks = _MARKS) -> z3.ArithRef:
    """A float binary instruction with the marker in an operand; `real_op(x, y)` is its meaning on reals."""
    what = f"`{opcode}.f*` ({where})"
    ca, va = split(a, what, marks)
    cb, vb = split(b, what, marks)
    plain_a, plain_b = z3.is_true(ca), z3.is_true(cb)
    if opcode == "max":
        if z3.is_false(ca) or z3.is_false(cb):      # max(-inf, x) = x
            return b if z3.is_false(ca) else a
        if plain_a or plain_b:
            (c, v), other = ((cb, vb), va) if plain_a else ((ca, va), vb)
            return real_op(other, z3.If(c, v, other))
        return join(z3.Or(ca, cb), real_op(z3.If(ca, va, vb), z3.If(cb, vb, va)))
    if opcode == "min" and (plain_a or plain_b):
        return join(z3.And(ca, cb), real_op(va, vb))
    if opcode == "sub" and plain_b:
        return join(ca, real_op(va, vb))
    if opcode == "add" and (plain_a or plain_b):
        return join(z3.And(ca, cb), real_op(va, vb))
    if opcode == "mul" and ((plain_b and _positive_constant(vb)) or (plain_a and _positive_constant(va))):
        return join(z3.And(ca, cb), real_op(va, vb))
    raise Unsupported(f"-inf (a masked lane's padding) reaches {what}")


ZERO_AT_NEG_INF = frozenset({"ex2", "exp"})   # ex2.approx and the expf idiom (`lark.ideal.exp`): +0 at -inf


def unary(opcode: str, a: z3.ArithRef, real_op, where: str, marks: Marks = _MARKS) -> z3.ArithRef:
    """A float unary instruction (or an idiom's ideal function) with the marker in its operand: only ex2 and
    exp have a known exact value there."""
    what = f"`{opcode}.f*` ({where})"
    c, v = split(a, what, marks)
    if opcode in ZERO_AT_NEG_INF:
        return z3.If(c, real_op(v), z3.RealVal(0)) if not z3.is_false(c) else z3.RealVal(0)
    raise Unsupported(f"-inf (a masked lane's padding) reaches {what}")


def settle(state: ThreadState, value: z3.ExprRef, condition: z3.BoolRef, what: str,
           timeout_ms: int = SETTLE_TIMEOUT_MS) -> z3.ExprRef:
    """`value` where the thread's launch ranges and `condition` (what holds wherever the value is used: the
    path for a register, the path and the predicate for a store) prove its guard: the padding is then never
    the value. Unchanged when the guard is not proved."""
    if not state.ctx.marks(value):
        return value
    c, v = split(value, what, state.ctx.marks)
    if z3.is_false(c):
        return value
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    # divisions named (`semantics.purify`: equisatisfiable): whether a pooling window has an inside tap reads
    # the output's row and column, x / W and x mod W, which as divider circuits take z3 a minute
    solver.add(purify.purified(z3.And(state.ctx.thread.in_launch(state.ctx.launch), condition, z3.Not(c))))
    return v if solver.check() == z3.unsat else value


def refuse_stored(state: ThreadState, value: z3.ExprRef, where: str) -> None:
    """Memory holds finite values only in this model: a store that may store -inf is outside it."""
    if state.ctx.marks(value):
        raise Unsupported(f"-inf (a masked lane's padding) may be stored to memory ({where})")
