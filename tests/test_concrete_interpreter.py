"""The concrete interpreter (semantics/concrete) on small kernels compiled by nvcc and on hand-written PTX:
values through barriers, shared memory, shuffles, votes and atomics, and the violations it must see."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from semantics.concrete import BudgetExceeded, SparseBuffer, run_blocks
from semantics.concrete.memory import END_BLOCK
from semantics.errors import Unsupported
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx

CUDA = r"""
extern "C" __global__ void warp_sum(const float* x, float* y) {
    float v = x[blockIdx.x * 64 + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(&y[blockIdx.x], v);
}
extern "C" __global__ void zero_then_overwrite(const float* x, float* y) {
    __shared__ float s[64];
    s[threadIdx.x] = 0.0f;
    __syncthreads();
    if (threadIdx.x < 32) s[63 - threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void racy(float* y) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    y[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
extern "C" __global__ void unwritten(float* y) {
    __shared__ float s[64];
    if (threadIdx.x < 60) s[threadIdx.x] = 1.0f;
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void shifted(const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i + 1];
}
extern "C" __global__ void diverge(float* y) {
    __shared__ float s[64];
    if (threadIdx.x < 32) { s[threadIdx.x] = 1; __syncthreads(); }
    y[threadIdx.x] = 2;
}
extern "C" __global__ void votes(const int* x, unsigned* y) {
    unsigned b = __ballot_sync(0xffffffff, x[threadIdx.x] > 0);
    int a = __all_sync(0xffffffff, x[threadIdx.x] > -5);
    if (threadIdx.x == 32) { y[0] = b; y[1] = a; }
}
extern "C" __global__ void histogram(const int* x, int* y) {
    __shared__ int h[4];
    if (threadIdx.x < 4) h[threadIdx.x] = 0;
    __syncthreads();
    atomicAdd(&h[x[threadIdx.x] & 3], 1);
    __syncthreads();
    if (threadIdx.x < 4) y[threadIdx.x] = h[threadIdx.x];
}
extern "C" __global__ void spin(float* y, int n) {
    float a = 0;
    for (int i = 0; i < n; i++) a += 1.0f;
    y[threadIdx.x] = a;
}
"""

UNDEFINED_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry guarded(.param .u64 y)
{
.reg .pred %p<2>;
.reg .f32 %f<3>;
.reg .b32 %r<2>;
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [y];
mov.u32 %r1, %tid.x;
setp.eq.s32 %p1, %r1, 0;
mov.f32 %f1, 0f3F800000;
@%p1 add.f32 %f2, %f1, %f1;
st.global.f32 [%rd1], %f2;
ret;
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> dict:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    root = Path(tmp_path_factory.mktemp("concrete"))
    (root / "k.cu").write_text(CUDA)
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-O3", "k.cu", "-o", "k.ptx"], cwd=root, check=True,
                   capture_output=True)
    return parse_ptx((root / "k.ptx").read_text()).kernels


def floats(name: str, n: int, role: str) -> Buffer:
    return Buffer(name, "float32", n, 4, role)


def ints(name: str, n: int, role: str) -> Buffer:
    return Buffer(name, "int32", n, 4, role)


X, Y = floats("x", 128, "input"), floats("y", 128, "output")


def test_warp_shuffles_and_an_atomic_sum_a_block(kernels):
    result = run_blocks(kernels["warp_sum"], Launch((2, 1, 1), (64, 1, 1)), [X, Y],
                        {"x": SparseBuffer(X, {65: 3}, 1), "y": SparseBuffer(Y)}, [(1, 0, 0)])
    assert result.completed and not result.violations
    assert result.final("y", 1) == 66   # 63 ones and a 3, added by two warps' lane 0
    assert result.final("y", 0) == 0    # block 0 did not run


def test_the_last_write_in_barrier_order_is_final_whoever_made_it(kernels):
    result = run_blocks(kernels["zero_then_overwrite"], Launch((2, 1, 1), (64, 1, 1)), [X, Y],
                        {"x": SparseBuffer(X, {i: i + 1 for i in range(32)}), "y": SparseBuffer(Y)}, [(1, 0, 0)])
    assert result.completed and not result.violations
    assert [result.final("y", 64 + i) for i in (0, 31, 32, 63)] == [0, 0, 32, 1]


def test_a_race_within_a_barrier_interval_is_seen(kernels):
    result = run_blocks(kernels["racy"], Launch((1, 1, 1), (64, 1, 1)), [Y], {"y": SparseBuffer(Y)}, [(0, 0, 0)])
    races = [v for v in result.violations if v.kind == "race"]
    assert races and races[0].thread == (1, 0, 0) and races[0].other == ((0, 0, 0), (0, 0, 0))
    assert not [v for v in result.violations if v.kind == "uninitialized_shared"]   # a race, not a hole


def test_a_shared_read_no_thread_wrote_is_seen(kernels):
    result = run_blocks(kernels["unwritten"], Launch((1, 1, 1), (64, 1, 1)), [Y], {"y": SparseBuffer(Y)},
                        [(0, 0, 0)])
    holes = [v for v in result.violations if v.kind == "uninitialized_shared"]
    assert [v.thread for v in holes] == [(t, 0, 0) for t in range(60, 64)]
    assert [v.offset for v in holes] == [4 * t for t in range(60, 64)]


def test_out_of_bounds_ends_the_run_at_the_thread_that_makes_it(kernels):
    buffers = {"x": SparseBuffer(X), "y": SparseBuffer(Y)}
    launch = Launch((2, 1, 1), (64, 1, 1))
    result = run_blocks(kernels["shifted"], launch, [X, Y], buffers, [(1, 0, 0)])
    assert result.halted.kind == "out_of_bounds" and result.halted.thread == (63, 0, 0)
    assert result.halted.offset == 512 and "x has 128 elements" in result.halted.detail
    alone = run_blocks(kernels["shifted"], launch, [X, Y], buffers, [(1, 0, 0)], threads=[(3, 0, 0)])
    assert alone.completed and list(alone.written["y"]) == [67]


def test_only_independent_threads_may_run_alone(kernels):
    with pytest.raises(Unsupported, match="interact"):
        run_blocks(kernels["racy"], Launch((1, 1, 1), (64, 1, 1)), [Y], {"y": SparseBuffer(Y)}, [(0, 0, 0)],
                   threads=[(0, 0, 0)])


def test_barrier_divergence_is_seen(kernels):
    result = run_blocks(kernels["diverge"], Launch((1, 1, 1), (64, 1, 1)), [Y], {"y": SparseBuffer(Y)},
                        [(0, 0, 0)])
    (found,) = [v for v in result.violations if v.kind == "barrier_divergence"]
    assert found.other == ((0, 0, 0), (32, 0, 0))
    assert result.barriers[((0, 0, 0), (0, 0, 0))] != result.barriers[((0, 0, 0), (32, 0, 0))] == ()


def test_votes_see_every_lane_of_the_warp(kernels):
    x, y = ints("x", 64, "input"), ints("y", 2, "output")
    result = run_blocks(kernels["votes"], Launch((1, 1, 1), (64, 1, 1)), [x, y],
                        {"x": SparseBuffer(x, {35: 5, 40: 7, 50: -9}), "y": SparseBuffer(y)}, [(0, 0, 0)])
    assert result.final("y", 0) == (1 << 3) | (1 << 8)
    assert result.final("y", 1) == 0   # lane 18 of warp 1 holds -9


def test_shared_atomics_count(kernels):
    x, y = ints("x", 64, "input"), ints("y", 4, "output")
    values = {i: i % 3 for i in range(64)}
    result = run_blocks(kernels["histogram"], Launch((1, 1, 1), (64, 1, 1)), [x, y],
                        {"x": SparseBuffer(x, values), "y": SparseBuffer(y)}, [(0, 0, 0)])
    assert result.completed and not result.violations
    assert [result.final("y", k) for k in range(4)] == [22, 21, 21, 0]


def test_the_step_budget_and_the_stop_callback_end_a_run(kernels):
    launch, buffers = Launch((1, 1, 1), (64, 1, 1)), {"y": SparseBuffer(Y)}
    with pytest.raises(BudgetExceeded):
        run_blocks(kernels["spin"], launch, [Y, 10_000], buffers, [(0, 0, 0)], max_steps=5_000)
    seen = []
    result = run_blocks(kernels["spin"], launch, [Y, 10], buffers, [(0, 0, 0)],
                        stop=lambda event: seen.append(event) or len(seen) == 3)
    assert result.stopped and len(seen) == 3 and result.final("y", 2) == 10 and result.final("y", 3) == 0


def test_a_stop_may_end_only_the_current_blocks_run(kernels):
    """END_BLOCK leaves the block's unstarted threads where they are and goes on with the next block, as a
    schedule that runs the second block right after the first one's access may (the race reproducer's cut)."""
    launch, buffers = Launch((2, 1, 1), (32, 1, 1)), {"x": SparseBuffer(X), "y": SparseBuffer(Y)}

    def stop(event):
        return END_BLOCK if event.kind == "store" and event.block == (0, 0, 0) else False
    result = run_blocks(kernels["shifted"], launch, [X, Y], buffers, [(0, 0, 0), (1, 0, 0)], stop=stop)
    stored = {a.offset // 4 for a in result.memory.accesses if a.kind == "store"}
    assert not result.stopped and result.halted is None and stored == {0, *range(32, 64)}


def test_a_register_read_that_no_write_on_the_path_defined_is_seen():
    kernel = parse_ptx(UNDEFINED_PTX).kernels["guarded"]
    y = floats("y", 1, "output")
    result = run_blocks(kernel, Launch((1, 1, 1), (2, 1, 1)), [y], {"y": SparseBuffer(y)}, [(0, 0, 0)])
    assert result.halted.kind == "undefined_register" and result.halted.thread == (1, 0, 0)
    assert "%f2" in result.halted.detail and result.final("y", 0) == 2
