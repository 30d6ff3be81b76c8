"""Findings point back at the source: the .loc line (kernel.py:N / kernel.cu:N) and, for Triton, program ids."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def verify(case: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(REPO / "examples" / case / "lark.toml"), "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    return json.loads(proc.stdout)


def test_triton_finding_names_program_id_and_python_line():
    result = verify("triton_add_missing_mask")
    witness = next(f["witness"] for f in result["findings"] if f["property"] == "memory_safety")
    assert witness["program_id"] == witness["block"]
    kernel_lines = (REPO / "examples" / "triton_add_missing_mask" / "kernel.py").read_text().splitlines()
    name, line = witness["source"].split(":")
    assert name == "kernel.py"
    assert any(call in kernel_lines[int(line) - 1] for call in ("tl.load", "tl.store"))


def test_cuda_finding_names_cu_line():
    result = verify("grid_stride_wrong_stride")
    first = next(f["witness"] for f in result["findings"] if f["property"] == "race_freedom")["first"]
    assert first["source"].startswith("kernel.cu:") and "program_id" not in first
