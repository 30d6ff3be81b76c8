"""A loop whose header block copies its accumulator before using it (Triton at BLOCK_SIZE 2048 and more:
`mov.b32 %r10, %r9` at the loop head, `add.f32 %r9, %r10, x`, and the copy read after the loop): the copy is
written on every path before it is read, so it carries nothing across iterations; the accumulator is summarised
and the value stored after the loop is the whole sum, as the concrete interpreter computes it."""

from __future__ import annotations

from fractions import Fraction

import z3

from semantics.comprehension import SUM
from semantics.concrete import SparseBuffer, run_blocks
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx
from semantics.ptx.symexec import execute
from semantics.replay import Evaluator
from semantics.terms import subterms

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 x, .param .u64 y, .param .u32 n)
{
.reg .pred %p<2>; .reg .b32 %r<12>; .reg .b64 %rd<7>;
ld.param.u64 %rd1, [x];
ld.param.u64 %rd2, [y];
ld.param.u32 %r1, [n];
cvta.to.global.u64 %rd3, %rd1;
cvta.to.global.u64 %rd4, %rd2;
mov.b32 %r9, 0f00000000;
mov.u32 %r2, 0;
$L_loop:
mov.b32 %r10, %r9;
mul.wide.u32 %rd5, %r2, 4;
add.s64 %rd6, %rd3, %rd5;
ld.global.b32 %r3, [%rd6];
add.f32 %r9, %r10, %r3;
add.s32 %r2, %r2, 1;
setp.lt.u32 %p1, %r2, %r1;
@%p1 bra $L_loop;
add.f32 %r11, %r10, %r3;
st.global.b32 [%rd4], %r11;
ret;
}
"""
LAUNCH = Launch((1, 1, 1), (1, 1, 1))
X, Y = Buffer("x", "float32", 64, 4, "input"), Buffer("y", "float32", 1, 4, "output")


def _stored(last_iteration: int) -> z3.ExprRef:
    """The value the symbolic thread stores, the loop's exit iteration given (as termination proves it)."""
    kernel = parse_ptx(PTX).kernels["t"]
    ctx = bind(kernel, LAUNCH, [X, Y, 64], {"x": X, "y": Y})
    execute(kernel, ctx, lambda loop, key: z3.BitVecVal(last_iteration, 64))
    (store,) = [a for a in ctx.accesses if a.kind == "store"]
    return z3.simplify(store.values[0])


def test_a_header_copy_of_the_accumulator_is_not_carried():
    value = _stored(63)
    assert any(z3.is_app(t) and t.decl() == SUM for t in subterms(value)), value
    solver = z3.Solver()
    solver.check()
    evaluator = Evaluator(solver.model(), {("x", i): Fraction(i) for i in range(64)})
    assert evaluator.value(value) == sum(range(64))


def test_the_interpreter_stores_the_whole_sum():
    kernel = parse_ptx(PTX).kernels["t"]
    x = SparseBuffer(X, {i: float(i) for i in range(64)})
    result = run_blocks(kernel, LAUNCH, [X, Y, 64], {"x": x, "y": SparseBuffer(Y)}, [(0, 0, 0)])
    assert result.written["y"][0] == sum(range(64))
