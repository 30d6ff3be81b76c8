"""Outputs read back (issue 16 item 6): one thread's program order (`readbacks.before`), the guessed writer
iteration, the store a thread overwrites itself (`superseded.own_later`'s guess), and what stays unsupported.
End to end: examples/lib_softmax_readback_* (verified, a race twin refuted) and
examples/sound_readback_overwritten_between_barriers (unknown: another thread writes the element in between)."""

from __future__ import annotations

import subprocess

import pytest
import z3

from orchestrator import job
from semantics.properties.readbacks import before, exits_proved, runs_at, writer_iteration
from semantics.ptx.state import Access
from semantics.ptx.symexec import LoopInfo

K1, K2, J = z3.BitVecs("k1 k2 j", 64)
FIRST = LoopInfo("$L_first", 10, K1, exit=z3.BitVecVal(767, 64))
SECOND = LoopInfo("$L_second", 30, K2, exit=z3.BitVecVal(767, 64))


def valid(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return solver.check() == z3.unsat


def store(offset: z3.BitVecRef, loops: tuple, line: int, guard: z3.BoolRef | None = None, width: int = 4) -> Access:
    values = tuple(z3.Real(f"v{line}.{n}") for n in range(width // 4))
    return Access("store", "global", "y", offset, width, 4, values,
                  z3.BoolVal(True) if guard is None else guard, loops, line, None)


# ------------------------------------------------------------------------------------------ program order

@pytest.mark.parametrize("a, b, expected", [
    (((), 5), ((), 7), True),                                  # straight-line code: by line
    (((), 7), ((), 5), False),
    ((((FIRST, K1),), 12), ((), 40), True),                    # a loop before a later instruction, every iteration
    (((), 40), (((FIRST, K1),), 12), False),
    ((((FIRST, K1),), 14), (((SECOND, K2),), 31), True),       # an earlier loop before a later one
    ((((SECOND, K2),), 31), (((FIRST, K1),), 14), False),
])
def test_order_outside_a_common_loop_is_by_line(a, b, expected):
    assert z3.is_true(z3.simplify(before(*a, *b))) is expected


def test_order_inside_one_loop_is_by_iteration_then_line():
    order = before(((FIRST, J),), 14, ((FIRST, K1),), 12)
    assert valid(order == z3.ULT(J, K1))                       # a later line runs before only at an earlier iteration
    order = before(((FIRST, J),), 12, ((FIRST, K1),), 14)
    assert valid(order == z3.ULE(J, K1))
    assert not valid(before(((FIRST, K1),), 12, ((FIRST, K1),), 12))   # never before itself


def test_two_summaries_of_one_header_are_not_ordered():
    """Paths reaching one loop header with different states get separate summaries; one thread runs only one."""
    again = LoopInfo("$L_first", 10, K2, exit=z3.BitVecVal(767, 64))
    assert z3.is_false(z3.simplify(before(((FIRST, K1),), 12, ((again, K2),), 14)))


# ------------------------------------------------------------------------------------------ the writer's iteration

ROW = z3.BitVec("row", 64)


def test_the_writer_iteration_of_a_loop_written_and_read_alike_is_the_readers():
    writer = store(ROW * 4096 + K1 * 4, ((FIRST, K1),), 12)
    assert writer_iteration(ROW * 4096 + K2 * 4, ((SECOND, K2),), writer, 0) == (True, K2)


def test_the_writer_iteration_of_an_unrolled_writer_counts_its_lanes():
    writer = store(ROW * 4096 + K1 * 16, ((FIRST, K1),), 12, width=16)     # a .v4 store, 4 elements an iteration
    found, w = writer_iteration(ROW * 4096 + K2 * 16 + 8, ((SECOND, K2),), writer, 2)
    assert found and valid(w == K2)
    found, w = writer_iteration(ROW * 4096 + K2 * 16 + 16, ((SECOND, K2),), writer, 0)
    assert found and valid(w == K2 + 1)


@pytest.mark.parametrize("read", [ROW * 4096 + K2 * 8, ROW * 4096 + K2 * 4 + 2, ROW * 4100 + K2 * 4])
def test_no_writer_iteration_is_guessed_where_the_offsets_do_not_move_together(read):
    writer = store(ROW * 4096 + K1 * 4, ((FIRST, K1),), 12)
    assert writer_iteration(read, ((SECOND, K2),), writer, 0) == (False, None)


def test_a_store_outside_loops_writes_only_its_own_offset():
    writer = store(ROW * 4096, (), 5)
    assert writer_iteration(ROW * 4096, ((SECOND, K2),), writer, 0) == (True, None)
    assert writer_iteration(ROW * 4096 + K2 * 4, ((SECOND, K2),), writer, 0) == (False, None)


def test_a_store_runs_exactly_at_an_iteration_up_to_the_proved_exit():
    writer = store(ROW * 4096 + K1 * 4, ((FIRST, K1),), 12, guard=z3.ULT(ROW, 8))
    loops, runs = runs_at(writer, [(K1, K2 + 1)])
    assert loops == ((FIRST, K2 + 1),)
    assert valid(runs == z3.And(z3.ULT(ROW, 8), z3.ULE(K2 + 1, 767)))


def test_orders_need_every_exit_proved_and_no_loop_phases():
    assert exits_proved([store(ROW, ((FIRST, K1),), 12)])
    assert not exits_proved([store(ROW, ((LoopInfo("$L", 3, K1), K1),), 4)])
    phased = store(ROW, (), 4)
    phased.phase_term = z3.BitVecVal(2, 64)
    assert not exits_proved([phased])


# ------------------------------------------------------------------------------------------ what stays unsupported

NESTED = r"""
#include <math.h>
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll 1
    for (int r = t; r < rows; r += gridDim.x * blockDim.x) {
        #pragma unroll 1
        for (int c = 0; c < cols; ++c) y[(long long)r * cols + c] = expf(x[(long long)r * cols + c]);
        #pragma unroll 1
        for (int c = 0; c < cols; ++c) y[(long long)r * cols + c] = y[(long long)r * cols + c] * 2.0f;
    }
}
"""
REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return 2 * torch.exp(x)


def get_inputs():
    return [torch.randn(256, 64)]


def get_init_inputs():
    return []
"""
MANIFEST = """name = "nested_readback"
[kernel]
source = "kernel.cu"
entry = "k"
[launch]
grid = [2, 1, 1]
block = [32, 1, 1]
args = ["x", "y", 256, 64]
[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""


def test_a_read_back_in_a_nested_loop_is_unknown_naming_it(tmp_path):
    if subprocess.run(["nvcc", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nvcc is not installed")
    for name, text in (("kernel.cu", NESTED), ("ref.py", REFERENCE), ("lark.toml", MANIFEST)):
        (tmp_path / name).write_text(text)
    result = job.run_verify(tmp_path / "lark.toml", 300)
    assert result.verdict == "unknown"
    assert "read of written buffer `y` in a nested loop" in result.reason


OWN_OVERWRITE = r"""
#include <math.h>
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    const float* xr = x + (long long)r * cols;
    float* yr = y + (long long)r * cols;
    float m = -INFINITY;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float s = 0.0f;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) { float e = expf(xr[c] - m); yr[c] = e; s += e; }
    yr[0] = 0.0f;
    #pragma unroll 1
    for (int c = 0; c < cols; ++c) yr[c] = yr[c] / s;
}
"""
SOFTMAX = REFERENCE.replace("2 * torch.exp(x)", "torch.softmax(x, dim=1)")


def test_a_read_back_its_own_thread_overwrote_in_between_is_not_the_earlier_store(tmp_path):
    """Element 0 is zeroed between the loop that stores it and the loop that reads it back: the read is not taken
    as the first loop's value, and the answer names the overwriting store (a wrong kernel: unknown, not yet
    refuted, since the read's placeholder is one function for every iteration and stays opaque)."""
    if subprocess.run(["nvcc", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nvcc is not installed")
    for name, text in (("kernel.cu", OWN_OVERWRITE), ("ref.py", SOFTMAX), ("lark.toml", MANIFEST)):
        (tmp_path / name).write_text(text)
    result = job.run_verify(tmp_path / "lark.toml", 300)
    assert result.verdict == "unknown"
    assert "may overwrite it in between" in result.reason
