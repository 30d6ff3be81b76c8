"""Symbolic execution drops a branch only when no thread of the launch takes it (`symexec.feasible`), and outside
loops a condition whose other side is dead is not carried into later guards.

The conditions below are the tap tests nvcc leaves in an unrolled 11 × 11 pooling window (KernelBench 45:
`ih < 2048` for ih = 11·oh + 10, oh = idx / 186 % 186, read as bit 11 of a 32-bit product). The window never
leaves the input, so the branch that skips a tap is dead; asked as it stands, the query needs 64-bit dividers
and runs out of the executor's 2 s, which kept every such branch (121 of them: minutes of symbolic execution);
purified, it is settled at once. A branch some thread does take must stay."""

from __future__ import annotations

import z3

from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx
from semantics.ptx.state import KernelContext
from semantics.ptx.symexec import execute, feasible

TID, CTAID = z3.BitVec("tid.x", 32), z3.BitVec("ctaid.x", 32)
IDX = z3.ZeroExt(32, TID) + 256 * z3.ZeroExt(32, CTAID)
LAUNCH = z3.And(z3.ULT(CTAID, 138384), z3.ULT(TID, 256), z3.Not(z3.ULE(35426304, IDX)))
ROW = z3.Extract(31, 0, z3.UDiv(IDX, 186))      # the plane's row index before % 186
PLANE = z3.Extract(31, 0, z3.UDiv(IDX, 34596))  # idx / (186 · 186)


def _tap_outside(bit: int) -> z3.BoolRef:
    """Bit `bit` of 11·oh (oh = ROW - 186·PLANE, taken apart as nvcc writes it) or of 11·idx - 2046·ROW set."""
    return z3.Or(z3.Extract(bit, bit, 11 * ROW + 4294965250 * PLANE) == 1,
                 z3.Extract(bit, bit, 11 * TID + 2816 * CTAID + 4294965250 * ROW) == 1)


def _solver() -> z3.Solver:
    solver = z3.Solver()
    solver.set("timeout", 2000)   # the executor's
    return solver


def test_a_tap_test_no_thread_fails_is_a_dead_branch():
    # 11·oh + 10 < 2048 for every oh < 186, and 11·ow likewise: bit 11 is clear for every thread
    assert not feasible(z3.And(LAUNCH, _tap_outside(11)), _solver())


def test_a_branch_some_thread_takes_stays():
    # bit 10 of 11·oh is set from oh = 94 on: the branch is taken, by a thread the solver can name
    condition = z3.And(LAUNCH, _tap_outside(10))
    assert feasible(condition, _solver())
    solver = z3.Solver()
    solver.add(condition)
    assert solver.check() == z3.sat


def test_the_solver_is_left_as_it_was():
    solver = _solver()
    solver.add(z3.ULT(TID, 300))
    feasible(z3.And(LAUNCH, _tap_outside(11)), solver)
    assert len(solver.assertions()) == 1 and solver.check() == z3.sat


# A store behind a test every thread of a 256-thread block passes, then one behind a test only some pass
# (tid.x < 100). The first test is `tid.x / 3 < 1000` (a division: left out of later guards, as a window's tap
# tests are) or `tid.x < 1024` (linear: kept, a free lemma for later queries).
HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
TWO_TESTS = HEAD + """.visible .entry t(.param .u64 t_param_0)
{{
.reg .pred %p<3>; .reg .b32 %r<3>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [t_param_0];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
{first}
@%p1 bra $L_done;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd3, %rd2, %rd3;
st.global.u32 [%rd3], %r1;
setp.ge.u32 %p2, %r1, 100;
@%p2 bra $L_done;
st.global.u32 [%rd2+2048], %r1;
$L_done:
ret;
}}
"""
DIVIDED = "div.u32 %r2, %r1, 3;\nsetp.ge.u32 %p1, %r2, 1000;"
LINEAR = "setp.ge.u32 %p1, %r1, 1024;"


def _stores(first: str) -> tuple[list, KernelContext]:
    kernel = parse_ptx(TWO_TESTS.format(first=first)).kernels["t"]
    y = Buffer("y", "int32", 1024, 4, "output")
    ctx = bind(kernel, Launch((1, 1, 1), (256, 1, 1)), [y], {"y": y})
    execute(kernel, ctx)
    stores = sorted((a for a in ctx.accesses if a.kind == "store"), key=lambda a: a.line)
    assert len(stores) == 2
    return stores, ctx


def test_an_implied_division_test_is_not_carried_into_later_guards():
    stores, ctx = _stores(DIVIDED)
    assert z3.is_true(z3.simplify(stores[0].guard))    # tid.x / 3 < 1000 holds for every thread: not in the guard
    solver = z3.Solver()                                # tid.x < 100 does not: the second store keeps it
    solver.add(z3.ULT(ctx.thread.tid[0], 256), z3.Not(stores[1].guard))
    assert solver.check() == z3.sat


def test_an_implied_linear_test_is_kept_as_a_lemma():
    stores, _ = _stores(LINEAR)
    assert not z3.is_true(z3.simplify(stores[0].guard))
    solver = z3.Solver()                                # the guard is tid.x < 1024, as the branch said
    solver.add(z3.Not(stores[0].guard == z3.ULT(z3.BitVec("tid.x", 32), 1024)))
    assert solver.check() == z3.unsat
