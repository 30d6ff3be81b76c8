"""A certificate of a shared-memory tree reduction replays: `lark verify --certificate` writes it, `lark check`
accepts it.

The tree's loop `for (s = blockDim.x / 2; s > 0; s >>= 1)` is one loop in the PTX (blockDim.x is no
compile-time constant) that symbolic execution unrolls: every level's read and store is at the same PTX line,
in its own barrier interval. The writer hints of `shared_values` and `shared_init` were once keyed by line
alone, so the levels shared one key, the certificate kept the last level's hint, and `lark check` replayed it
for every level ("could not prove the shared read ... reads a written value"). CUDA, so nvcc is needed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import main

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not on PATH")

TREE = """extern "C" __global__ void row_sum_tree(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float s[8];
    unsigned t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float v = 0.0f;
    for (int c = t; c < cols; c += blockDim.x) v += row[c];
    s[t] = v;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
"""
TREE_REF = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
"""
MANIFEST = """name = "shared_tree"

[kernel]
source = "kernel.cu"
entry = "row_sum_tree"

[launch]
grid = [16, 1, 1]
block = [8, 1, 1]
args = ["x", "y", 64]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""


def lark(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def test_the_certificate_of_an_eight_thread_shared_tree_replays(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "kernel.cu").write_text(TREE)
    (task / "ref.py").write_text(TREE_REF)
    (task / "lark.toml").write_text(MANIFEST)
    status, output = lark("verify", task / "lark.toml", "--json", "--certificate", tmp_path / "cert.json")
    assert status == 0 and json.loads(output)["verdict"] == "verified", output
    hints = json.loads((tmp_path / "cert.json").read_text())["hints"]
    # one writer hint per level: a read of the tree at one PTX line, three levels (st = 4, 2, 1), three keys
    phases: dict[str, set[str]] = {}
    for key in hints:
        if key.startswith("shared_value:") and "@" in key.split(":")[1]:
            line, phase = key.split(":")[1].split("@")
            phases.setdefault(line, set()).add(phase)
    assert max(map(len, phases.values()), default=0) >= 3, sorted(hints)
    status, output = lark("check", tmp_path / "cert.json", "--solver", "z3")
    assert status == 0 and "certificate holds" in output, output
