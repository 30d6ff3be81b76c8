"""Joining the paths of one symbolic thread where they meet again.

A reduction tree `if (t < s) a[t] += a[t + s]; __syncthreads();` forks at every level, and the thread's
paths after the tree differ only in which stores they made on the way. Without joining, every later
instruction, loop summary and store is repeated once per path (nine paths after a 256-thread tree, times
the next tree's). Two states at one instruction are joined into one whose path condition is the
disjunction of theirs and whose registers are `If(first path, its value, the other's)` where they differ.

The joined state denotes exactly the union of the two: every recorded effect (an access, a shared read, a
barrier path) already carries its own path condition, and the joined path condition is the disjunction, so
nothing one path could do is lost and nothing is added. States that differ in what is not a value (the
barriers passed, the enclosing loops, a pointer's buffer) are not joined.
"""

from __future__ import annotations

import heapq

import z3

from semantics.ptx.machine import Pointer, simplify
from semantics.ptx.state import ThreadState, fresh_like


def join(a: ThreadState, b: ThreadState) -> ThreadState | None:
    """One state standing for both, or None when they cannot be joined."""
    if not _same_frame(a, b):
        return None
    shared = _common_prefix(a.path, b.path)
    took_a = z3.And(a.path[shared:]) if len(a.path) > shared else z3.BoolVal(True)
    took_b = z3.And(b.path[shared:]) if len(b.path) > shared else z3.BoolVal(True)
    regs, undefined = {}, {}
    for name in a.regs.keys() | b.regs.keys():
        ua, ub = (s.undefined.get(name, z3.BoolVal(False)) if name in s.regs else z3.BoolVal(True) for s in (a, b))
        if ua is None or ub is None:
            undefined[name] = None
        elif not (z3.is_false(ua) and z3.is_false(ub)):
            undefined[name] = simplify(z3.If(took_a, ua, ub))
        # a register set on one path only holds anything at all on the other
        va = a.regs[name] if name in a.regs else fresh_like(b.regs[name], name, a.ctx.fresh())
        vb = b.regs[name] if name in b.regs else fresh_like(a.regs[name], name, a.ctx.fresh())
        value = _join_value(took_a, va, vb)
        if value is None:
            return None
        regs[name] = value
    out = a.copy()
    either = z3.Or(took_a, took_b)
    out.path = a.path[:shared] + ([] if _always(either) else [simplify(either)])
    out.regs = regs
    out.undefined = undefined
    out.own_stores = a.own_stores + tuple(e for e in b.own_stores if not any(e is f for f in a.own_stores))
    return out


def _same_frame(a: ThreadState, b: ThreadState) -> bool:
    """Everything but the path condition, the registers and the thread's own stores agrees."""
    return (a.ctx is b.ctx and a.barriers == b.barriers and a.copies == b.copies and a.recording == b.recording
            and a.in_body == b.in_body
            and a.entered_loop == b.entered_loop and a.generic is b.generic
            and len(a.loops) == len(b.loops)
            and all(la is lb and _same(ka, kb) for (la, ka), (lb, kb) in zip(a.loops, b.loops, strict=True))
            and _same(a.phase_extra, b.phase_extra)
            and a.guard_pred is None and b.guard_pred is None)


def _always(condition: z3.BoolRef) -> bool:
    """Whether the condition holds whatever the thread (c ∨ ¬c, after simplification has reshaped ¬c): then
    the joined path needs no condition of its own."""
    solver = z3.Solver()
    solver.set("timeout", 1000)
    solver.add(z3.Not(condition))
    return solver.check() == z3.unsat


def _same(x, y) -> bool:
    return x is y or (z3.is_ast(x) and z3.is_ast(y) and z3.eq(x, y))


def _common_prefix(p: list[z3.BoolRef], q: list[z3.BoolRef]) -> int:
    n = 0
    while n < min(len(p), len(q)) and z3.eq(p[n], q[n]):
        n += 1
    return n


def _join_value(took_a: z3.BoolRef, va, vb):
    if isinstance(va, Pointer) or isinstance(vb, Pointer):
        if not (isinstance(va, Pointer) and isinstance(vb, Pointer)) or (va.space, va.buffer) != (vb.space, vb.buffer):
            return None
        offset = _join_value(took_a, va.offset, vb.offset)
        return Pointer(va.space, va.buffer, offset)
    if z3.eq(va, vb):
        return va
    if va.sort() != vb.sort():
        return None
    return z3.If(took_a, va, vb)


class Worklist:
    """The states waiting to run, lowest instruction first. Outside a loop's back edge, control only moves
    forward (a backward branch that is not a loop's back edge is refused), so when the lowest state is taken,
    every other state that will ever reach its instruction is already there: they are joined into it."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, ThreadState]] = []
        self._count = 0

    def __bool__(self) -> bool:
        return bool(self._heap)

    def append(self, item: tuple[int, ThreadState]) -> None:
        heapq.heappush(self._heap, (item[0], self._count, item[1]))
        self._count += 1

    def extend(self, items) -> None:
        for item in items:
            self.append(item)

    def pop(self) -> tuple[int, ThreadState]:
        pc, _, state = heapq.heappop(self._heap)
        apart = []
        while self._heap and self._heap[0][0] == pc:
            other = heapq.heappop(self._heap)
            joined = join(state, other[2])
            if joined is None:
                apart.append(other)
            else:
                state = joined
        for item in apart:
            heapq.heappush(self._heap, item)
        return pc, state
