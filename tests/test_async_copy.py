"""Asynchronous copies (issue 16 item 7, Triton's num_stages > 1): cp.async with commit/wait groups is a global
read and a shared write in its barrier interval, complete by the thread's next barrier; a copy still in flight
at a barrier is not modelled; a neighbour's copy read without a barrier is a race (replayed by the concrete
interpreter, which runs the copy at once). The manifest's `num_stages` reaches triton.compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import job
from orchestrator.manifest import IntakeError, load_task

# Each thread copies x[b, t] to smem[t] asynchronously, waits, passes a barrier and stores its neighbour's
# element: y[b, t] = x[b, (t + 1) % 256].
ROLL = """.version 8.0
.target sm_90
.address_size 64
.shared .align 4 .b8 smem[1024];
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{{
.reg .pred %p<2>; .reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .f32 %f<2>;
ld.param.u64 %rd1, [k_param_0];
ld.param.u64 %rd2, [k_param_1];
cvta.to.global.u64 %rd3, %rd1;
cvta.to.global.u64 %rd4, %rd2;
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ctaid.x;
shl.b32 %r3, %r2, 8;
add.s32 %r3, %r3, %r1;
mul.wide.u32 %rd5, %r3, 4;
add.s64 %rd6, %rd3, %rd5;
mov.u32 %r4, smem;
shl.b32 %r5, %r1, 2;
add.s32 %r6, %r4, %r5;
{copy}
cp.async.commit_group;
{wait}
{barrier}
add.s32 %r7, %r1, 1;
and.b32 %r7, %r7, 255;
shl.b32 %r8, %r7, 2;
add.s32 %r9, %r4, %r8;
ld.shared.f32 %f1, [%r9];
add.s64 %rd7, %rd4, %rd5;
st.global.f32 [%rd7], %f1;
ret;
}}
"""
COPY = "cp.async.ca.shared.global [%r6], [%rd6], 4;"
REFERENCE = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x[:, 1:], x[:, :1]], dim=1)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""
MANIFEST = """name = "async_roll"
[kernel]
source = "kernel.ptx"
entry = "k"
[launch]
grid = [64, 1, 1]
block = [256, 1, 1]
args = ["x", "y"]
[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""


def verify(tmp_path: Path, copy: str = COPY, wait: str = "cp.async.wait_group 0;", barrier: str = "bar.sync 0;"):
    (tmp_path / "kernel.ptx").write_text(ROLL.format(copy=copy, wait=wait, barrier=barrier))
    (tmp_path / "ref.py").write_text(REFERENCE)
    (tmp_path / "lark.toml").write_text(MANIFEST)
    return job.run_verify(tmp_path / "lark.toml", 300)


def test_a_copy_waited_for_before_the_barrier_is_what_the_neighbour_reads(tmp_path):
    result = verify(tmp_path)
    assert result.verdict == "verified", result.reason


def test_a_copy_with_a_source_size_of_zero_or_all_is_modelled(tmp_path):
    masked = "setp.lt.u32 %p1, %r1, 256;\nselp.b32 %r10, 4, 0, %p1;\ncp.async.cg.shared.global [%r6], [%rd6], 4, %r10;"
    result = verify(tmp_path, copy=masked)
    assert result.verdict == "verified", result.reason


def test_any_other_source_size_is_not(tmp_path):
    odd = "and.b32 %r10, %r1, 7;\ncp.async.ca.shared.global [%r6], [%rd6], 4, %r10;"
    result = verify(tmp_path, copy=odd)
    assert result.verdict == "unknown" and "source size" in result.reason


@pytest.mark.parametrize("wait", ["", "cp.async.wait_group 1;"])
def test_a_copy_in_flight_at_a_barrier_is_unknown(tmp_path, wait):
    result = verify(tmp_path, wait=wait)
    assert result.verdict == "unknown" and "in flight" in result.reason


def test_wait_all_completes_uncommitted_copies_too(tmp_path):
    result = verify(tmp_path, wait="cp.async.wait_all;")
    assert result.verdict == "verified", result.reason


def test_a_neighbours_copy_read_without_a_barrier_is_a_race(tmp_path):
    result = verify(tmp_path, barrier="")
    assert result.verdict == "refuted"
    assert result.properties["race_freedom"] == "violated"


def _triton_manifest(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "kernel.py").write_text("import triton\n")
    (tmp_path / "ref.py").write_text(REFERENCE)
    path = tmp_path / "lark.toml"
    text = MANIFEST.replace("block = [256, 1, 1]\n", "")
    text = text.replace('source = "kernel.ptx"', f'source = "kernel.py"\n{extra}')
    path.write_text(text.replace('entry = "k"', 'entry = "k"\nsignature = { x = "*fp32", y = "*fp32" }'))
    return path


def test_num_stages_is_a_triton_option_from_1_to_8(tmp_path):
    assert load_task(_triton_manifest(tmp_path, "num_stages = 2")).kernel.num_stages == 2
    assert load_task(_triton_manifest(tmp_path, "")).kernel.num_stages is None   # Triton's own default
    for bad in ("num_stages = 0", "num_stages = 9", 'num_stages = "2"'):
        with pytest.raises(IntakeError):
            load_task(_triton_manifest(tmp_path, bad))


def test_num_stages_is_refused_for_cuda(tmp_path):
    (tmp_path / "kernel.ptx").write_text(ROLL.format(copy=COPY, wait="", barrier=""))
    (tmp_path / "ref.py").write_text(REFERENCE)
    (tmp_path / "lark.toml").write_text(MANIFEST.replace('entry = "k"', 'entry = "k"\nnum_stages = 2'))
    with pytest.raises(IntakeError):
        load_task(tmp_path / "lark.toml")
