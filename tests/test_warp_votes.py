"""vote.sync and redux.sync read a value at all 32 lanes of the warp: checked here against Python's own fold
at concrete threads, through the real parser and instruction table."""

from __future__ import annotations

import functools

import pytest
import z3
from ptx_helpers import instructions

from semantics.ptx.machine import Launch, Thread, special_registers
from semantics.ptx.state import KernelContext, ThreadState
from semantics.ptx.sync import SYNC


def run(body: str, value: z3.ExprRef, block: int = 64) -> tuple[ThreadState, Thread]:
    """Execute `body` with %p1 / %r2 holding `value` (a function of tid.x) at every lane."""
    launch = Launch((1, 1, 1), (block, 1, 1))
    thread = Thread.fresh("")
    ctx = KernelContext(launch, thread, {}, {}, special_registers(thread, launch))
    reg = "%p1" if z3.is_bool(value) else "%r2"
    state = ThreadState(ctx, {reg: z3.substitute(value, (z3.BitVec("tid", 32), thread.tid[0]))})
    for ins in instructions(body):
        SYNC[ins.opcode](state, ins)
    return state, thread


def at(state: ThreadState, thread: Thread, reg: str, tid: int) -> object:
    v = z3.simplify(z3.substitute(state.regs[reg], (thread.tid[0], z3.BitVecVal(tid, 32))))
    return v.as_long() if z3.is_bv_value(v) else z3.is_true(v) if z3.is_bool(v) else v


TID = z3.BitVec("tid", 32)
POSITIVE = z3.URem(TID, 3) == 0          # lanes 0, 3, 6, ... of each warp


def python_lanes(tid: int) -> list[int]:
    first = tid - tid % 32
    return list(range(first, first + 32))


@pytest.mark.parametrize("tid", [0, 37, 63])
def test_ballot_sets_the_bit_of_each_lane_whose_predicate_holds(tid: int) -> None:
    state, thread = run("vote.sync.ballot.b32 %r1, %p1, -1;", POSITIVE)
    expected = sum(1 << (t % 32) for t in python_lanes(tid) if t % 3 == 0)
    assert at(state, thread, "%r1", tid) == expected
    assert state.ctx.warp_uniform, "a vote is exact only if every lane is on this path: a side condition"


@pytest.mark.parametrize(("mode", "predicate", "fold"), [
    (".all", z3.ULT(TID, 40), all), (".any", z3.UGE(TID, 60), any),
    (".uni", z3.ULT(TID, 32), lambda values: all(values) or not any(values)),
])
def test_all_any_uni_fold_the_predicate_over_the_warp(mode, predicate, fold) -> None:
    state, thread = run(f"vote.sync{mode}.pred %p2, %p1, -1;", predicate)
    python = {".all": lambda t: t < 40, ".any": lambda t: t >= 60, ".uni": lambda t: t < 32}[mode]
    for tid in (5, 33, 62):
        assert at(state, thread, "%p2", tid) == fold([python(t) for t in python_lanes(tid)])


@pytest.mark.parametrize(("op", "ty", "fold"), [
    (".add", ".u32", sum), (".max", ".u32", max), (".min", ".s32", min), (".xor", ".b32",
                                                                          lambda v: functools.reduce(int.__xor__, v)),
])
def test_redux_folds_the_value_over_the_warp(op, ty, fold) -> None:
    state, thread = run(f"redux.sync{op}{ty} %r1, %r2, -1;", TID * 7 - 100)
    for tid in (3, 40):
        values = [(t * 7 - 100) for t in python_lanes(tid)]
        want = fold(values) if ty == ".s32" else fold([v % (1 << 32) for v in values])
        assert at(state, thread, "%r1", tid) == want % (1 << 32)


def test_a_partial_member_mask_stays_opaque() -> None:
    state, _ = run("vote.sync.ballot.b32 %r1, %p1, 65535;", POSITIVE)
    assert str(state.regs["%r1"]).startswith("opaque!")
    assert not state.ctx.warp_uniform


def test_activemask_stays_opaque() -> None:
    state, _ = run("activemask.b32 %r1;", POSITIVE)
    assert str(state.regs["%r1"]).startswith("opaque!")
