"""Halving tree loops (issue 16, item 4) run iteration by iteration when their counter starts at a constant
(`WARP_SZ`, a literal): both executors store the same sum; a counter from a thread id stays unsupported."""

from __future__ import annotations

import pytest
import z3

from semantics.concrete import SparseBuffer, run_blocks
from semantics.errors import Unsupported
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx
from semantics.ptx.symexec import execute

LOOP = """.version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 t_param_0)
{
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<3>;
ld.param.u64 %rd1, [t_param_0];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, START;
mov.u32 %r2, 0;
$L_loop:
add.s32 %r2, %r2, %r1;
shr.u32 %r1, %r1, 1;
setp.ne.s32 %p1, %r1, 0;
@%p1 bra $L_loop;
st.global.u32 [%rd2], %r2;
ret;
}
"""
LAUNCH = Launch((1, 1, 1), (1, 1, 1))
Y = Buffer("y", "int32", 1, 4, "output")


def _symbolic(text: str) -> int:
    kernel = parse_ptx(text).kernels["t"]
    ctx = bind(kernel, LAUNCH, [Y], {"y": Y})
    execute(kernel, ctx)
    (store,) = [a for a in ctx.accesses if a.kind == "store"]
    return z3.simplify(store.values[0]).as_long()


def _concrete(text: str) -> int:
    kernel = parse_ptx(text).kernels["t"]
    result = run_blocks(kernel, LAUNCH, [Y], {"y": SparseBuffer(Y)}, [(0, 0, 0)])
    return result.written["y"][0]


@pytest.mark.parametrize("start, total", [("WARP_SZ", 63), ("256", 511), ("1", 1)])
def test_a_halving_loop_from_a_constant_runs_out_in_both_executors(start, total):
    text = LOOP.replace("START", start)
    assert _symbolic(text) == total == _concrete(text)


def test_a_halving_loop_from_a_thread_id_is_not_unrolled():
    with pytest.raises(Unsupported, match="not an induction variable"):
        _symbolic(LOOP.replace("START", "%tid.x"))
