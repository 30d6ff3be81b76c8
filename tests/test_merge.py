"""Joining a thread's paths where they meet: the joined state is exactly the union of the two."""

from __future__ import annotations

import z3

from semantics.ptx.machine import Launch, Pointer, Thread, special_registers
from semantics.ptx.merge import Worklist, join
from semantics.ptx.state import KernelContext, ThreadState


def _state() -> ThreadState:
    launch = Launch((1, 1, 1), (256, 1, 1))
    thread = Thread.fresh("")
    return ThreadState(KernelContext(launch, thread, {}, {}, special_registers(thread, launch)))


def _fork(state: ThreadState, cond: z3.BoolRef) -> tuple[ThreadState, ThreadState]:
    taken, other = state.copy(), state.copy()
    taken.path.append(cond)
    other.path.append(z3.Not(cond))
    return taken, other


def _valid(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return solver.check() == z3.unsat


def test_an_if_then_join_keeps_the_prefix_and_selects_the_differing_register():
    base = _state()
    tid = base.ctx.thread.tid[0]
    base.path.append(z3.ULT(tid, 200))
    base.regs["%r1"] = tid
    taken, other = _fork(base, z3.ULT(tid, 128))
    taken.regs["%r2"] = tid + 1
    other.regs["%r2"] = tid + 2
    joined = join(taken, other)
    assert joined is not None
    assert len(joined.path) == 1 and z3.eq(joined.path[0], base.path[0])   # c ∨ ¬c is no condition
    assert z3.eq(joined.regs["%r1"], tid)
    assert _valid(joined.regs["%r2"] == z3.If(z3.ULT(tid, 128), tid + 1, tid + 2))


def test_a_register_set_on_one_path_only_is_unconstrained_on_the_other():
    taken, other = _fork(_state(), z3.Bool("p"))
    taken.regs["%r9"] = z3.BitVecVal(7, 32)
    joined = join(taken, other)
    assert _valid(z3.Implies(z3.Bool("p"), joined.regs["%r9"] == 7))
    assert not _valid(z3.Implies(z3.Not(z3.Bool("p")), joined.regs["%r9"] == 7))


def test_states_past_different_barriers_or_pointing_into_different_buffers_stay_apart():
    taken, other = _fork(_state(), z3.Bool("p"))
    taken.barriers = (12,)
    assert join(taken, other) is None
    taken, other = _fork(_state(), z3.Bool("p"))
    taken.regs["%rd1"] = Pointer("global", "x", z3.BitVecVal(0, 64))
    other.regs["%rd1"] = Pointer("global", "y", z3.BitVecVal(0, 64))
    assert join(taken, other) is None


def test_own_stores_of_both_paths_are_kept_once():
    base = _state()
    base.own_stores = (("s", z3.BitVecVal(0, 64), z3.RealVal(1), z3.BoolVal(True), 0),)
    taken, other = _fork(base, z3.Bool("p"))
    taken.own_stores += (("s", z3.BitVecVal(1, 64), z3.RealVal(2), z3.Bool("p"), 0),)
    joined = join(taken, other)
    assert len(joined.own_stores) == 2


def test_the_worklist_joins_states_waiting_at_one_instruction_and_runs_the_lowest_first():
    taken, other = _fork(_state(), z3.Bool("p"))
    work = Worklist()
    work.extend([(9, taken), (4, _state()), (9, other)])
    assert work.pop()[0] == 4
    pc, joined = work.pop()
    assert pc == 9 and joined.path == [] and not work
