"""Atomic accumulation (semantics/properties/atomics.py): a correct total sum verifies, and each way the
bijection between added values and the reference's terms can break is refuted with a one-hot witness that
`lark check` reproduces.

Each variant is examples/atomic_total_sum with one change, compiled by the real nvcc."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / "examples" / "atomic_total_sum"
GUARDED_ADD = "if (i < n) atomicAdd(out, x[i]);"


def verify(tmp_path: Path, kernel_edit: tuple[str, str] | None = None, grid: int | None = None,
           zeroed: bool = True, witness: Path | None = None) -> dict:
    task = tmp_path / "task"
    shutil.copytree(BASE, task)
    if kernel_edit:
        source = (task / "kernel.cu").read_text()
        assert kernel_edit[0] in source
        (task / "kernel.cu").write_text(source.replace(*kernel_edit))
    manifest = (task / "lark.toml").read_text()
    if grid is not None:
        manifest = manifest.replace("grid = [65536, 1, 1]", f"grid = [{grid}, 1, 1]")
    if not zeroed:
        manifest = manifest.split("[tensors]")[0]
    (task / "lark.toml").write_text(manifest)
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(task / "lark.toml"), "--json", *(["--witness", str(witness)] if witness else [])],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    return json.loads(proc.stdout)


def test_grid_stride_atomic_sum_verifies(tmp_path: Path) -> None:
    loop = ("for (long long j = i; j < n; j += (long long)gridDim.x * blockDim.x) atomicAdd(out, x[j]);")
    result = verify(tmp_path, (GUARDED_ADD, loop), grid=1000)
    assert result["verdict"] == "verified", result["reason"]


def test_undeclared_initial_contents_are_unknown(tmp_path: Path) -> None:
    result = verify(tmp_path, zeroed=False)
    assert result["verdict"] == "unknown"
    assert result["properties"]["equivalence"] == "unknown"
    assert 'init = "zeros"' in result["reason"]


@pytest.mark.parametrize(("edit", "grid", "kernel_value", "reference_value"), [
    ((GUARDED_ADD, "if (i < n) atomicAdd(out, 2.0f * x[i]);"), None, 2.0, 1.0),
    (None, 65535, 0.0, 1.0),
    ((GUARDED_ADD, "atomicAdd(out, x[i % n]);"), 131072, 2.0, 1.0),
    ((GUARDED_ADD, "if (i < n && x[i] < 0.0f) atomicAdd(out, x[i]);"), None, 0.0, 1.0),
], ids=["wrong-value", "grid-one-block-short", "terms-added-twice", "guard-reads-the-input"])
def test_broken_accumulation_is_refuted_with_a_one_hot_witness(tmp_path: Path, edit, grid, kernel_value,
                                                               reference_value) -> None:
    result = verify(tmp_path, edit, grid, witness=tmp_path / "witness.json")
    assert result["verdict"] == "refuted"
    assert result["properties"]["equivalence"] == "violated"
    (finding,) = result["findings"]
    w = finding["witness"]
    assert (w["kernel_value"], w["reference_value"]) == (kernel_value, reference_value)
    assert w["other_inputs"] == 0 and list(w["inputs"].values()) == [1]
    (name,) = w["inputs"]
    index = int(name.removeprefix("x[").removesuffix("]"))
    assert 0 <= index < 16777216
    assert check(tmp_path / "witness.json").returncode == 0


def test_a_tampered_one_hot_witness_is_rejected(tmp_path: Path) -> None:
    verify(tmp_path, None, 65535, witness=tmp_path / "witness.json")
    document = json.loads((tmp_path / "witness.json").read_text())
    document["findings"][0]["witness"]["kernel_value"] = 5.0
    (tmp_path / "witness.json").write_text(json.dumps(document))
    proc = check(tmp_path / "witness.json")
    assert proc.returncode != 0
    assert "do not leave 5.0" in proc.stdout + proc.stderr


def check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "check", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


BLOCK_SUM = """
extern "C" __global__ void total_sum(const float* __restrict__ x, float* out, long long n) {
    __shared__ float s;
    if (threadIdx.x == 0) s = 0.0f;
    __syncthreads();
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&s, x[i]);
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, s);
}
"""


def test_shared_memory_after_atomics_is_not_read_as_one_writers_value(tmp_path: Path) -> None:
    """The read of `s` must not resolve to the `s = 0` store that precedes the atomics (that would compare 0
    with the sum and report a false witness): it stays opaque, and the verdict names why."""
    source = (BASE / "kernel.cu").read_text()
    result = verify(tmp_path, (source, BLOCK_SUM))
    assert result["verdict"] == "unknown"
    assert "atomics updated the array" in result["reason"]
