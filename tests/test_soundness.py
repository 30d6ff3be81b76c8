"""The soundness scenarios of issue 13 in their PTX forms, plus the variants that must stay verified.

Each task is hand-written PTX (no nvcc) computing y from x over 100 x 100 floats; `{value}` is the few
instructions that make %f2 from %f1 (the loaded element). The CUDA forms are examples/sound_* (EXPECT).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tiny_tasks import PTX

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {expr}


def get_inputs():
    return [torch.randn(100, 100, dtype=torch.{dtype})]


def get_init_inputs():
    return []
"""

MANIFEST = """name = "{name}"

[kernel]
source = "kernel.ptx"
entry = "copy_kernel"

[launch]
grid = [40, 1, 1]
block = [256, 1, 1]
args = ["x", "y", 10000]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def verify(tmp_path: Path, cache: Path, value: str, expr: str = "x.clone()", dtype: str = "float32",
           *options: str, regs: str = "") -> dict:
    case = tmp_path / "case"
    case.mkdir(exist_ok=True)
    ptx = PTX.format(value=value)
    if regs:
        ptx = ptx.replace("\t.reg .f32 %f<3>;", f"\t.reg .f32 %f<3>;\n{regs}")
    (case / "kernel.ptx").write_text(ptx)
    (case / "ref.py").write_text(REFERENCE.format(expr=expr, dtype=dtype))
    (case / "lark.toml").write_text(MANIFEST.format(name=tmp_path.name))
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(case / "lark.toml"), "--json", *options],
                          env={**os.environ, "LARK_CACHE_DIR": str(cache)}, capture_output=True, text=True,
                          timeout=600)
    return json.loads(proc.stdout)


# ---------------------------------------------------------------- item 2: registers defined under a predicate

def test_a_predicated_first_definition_read_where_its_predicate_is_false_is_a_finding(tmp_path, cache):
    value = "setp.gt.f32 %p2, %f1, 0f00000000;\n\t@%p2 add.f32 %f2, %f1, %f1;"
    result = verify(tmp_path, cache, value, "x + x", regs="\t.reg .pred %p2;")
    assert result["verdict"] == "refuted", result
    assert result["properties"]["memory_safety"] == "violated", result
    (finding,) = [f for f in result["findings"] if f["property"] == "memory_safety"]
    assert finding["witness"]["register"] == "%f2" and "block" in finding["witness"], finding


def test_a_predicated_first_definition_whose_predicate_always_holds_is_defined(tmp_path, cache):
    # %p2 = (%r1 == %r1): the write always happens, so %f2 is defined wherever it is read
    value = "setp.eq.s32 %p2, %r1, %r1;\n\t@%p2 add.f32 %f2, %f1, %f1;"
    result = verify(tmp_path, cache, value, "x + x", regs="\t.reg .pred %p2;")
    assert result["verdict"] == "verified", result


def test_a_register_defined_under_a_predicate_then_unconditionally_is_defined(tmp_path, cache):
    value = "setp.gt.f32 %p2, %f1, 0f00000000;\n\t@%p2 add.f32 %f2, %f1, %f1;\n\t@!%p2 add.f32 %f2, %f1, %f1;"
    result = verify(tmp_path, cache, value, "x + x", regs="\t.reg .pred %p2;")
    assert result["verdict"] == "verified", result


def test_a_register_no_path_defines_is_a_finding(tmp_path, cache):
    result = verify(tmp_path, cache, "// %f2 is never written")
    assert result["verdict"] == "refuted", result
    assert result["properties"]["memory_safety"] == "violated", result
    assert any(f["witness"].get("register") == "%f2" for f in result["findings"]), result


def test_a_register_defined_on_one_branch_only_is_a_finding(tmp_path, cache):
    value = ("setp.gt.f32 %p2, %f1, 0f00000000;\n\t@!%p2 bra $L__skip;\n\tadd.f32 %f2, %f1, %f1;\n"
             "$L__skip:")
    result = verify(tmp_path, cache, value, "x + x", regs="\t.reg .pred %p2;")
    assert result["verdict"] == "refuted", result
    assert result["properties"]["memory_safety"] == "violated", result


# ---------------------------------------------------------------- item 3: narrowing conversions, float.reals

@pytest.mark.parametrize("narrow", ["f16", "bf16"])
def test_a_narrowing_round_trip_is_unknown_naming_its_line(tmp_path, cache, narrow):
    value = f"cvt.rn.{narrow}.f32 %rs1, %f1;\n\tcvt.f32.{narrow} %f2, %rs1;"
    result = verify(tmp_path, cache, value, regs="\t.reg .b16 %rs<2>;")
    assert result["verdict"] == "unknown", result
    assert "narrowing" in result["reason"] and "line" in result["reason"], result


def test_allow_narrowing_lists_the_axiom_instance(tmp_path, cache):
    value = "cvt.rn.f16.f32 %rs1, %f1;\n\tcvt.f32.f16 %f2, %rs1;"
    result = verify(tmp_path, cache, value, "x.clone()", "float32", "--allow-narrowing", regs="\t.reg .b16 %rs<2>;")
    assert result["verdict"] == "verified", result
    assert "float.narrowing" in result["axioms"], result
    assert any(a.startswith("float.narrowing@line ") for a in result["axioms"]), result


def test_a_conversion_to_the_reference_dtype_is_not_narrowing(tmp_path, cache):
    # the reference computes in float16: converting to f16 is what it does too
    value = "cvt.rn.f16.f32 %rs1, %f1;\n\tcvt.f32.f16 %f2, %rs1;"
    result = verify(tmp_path, cache, value, "x.clone()", "float16", regs="\t.reg .b16 %rs<2>;")
    assert "narrowing" not in (result["reason"] or ""), result


def test_every_float_verdict_lists_exact_arithmetic(tmp_path, cache):
    # (x + 2^24) - 2^24 rounds x to an integer in float32 and is x over the reals: verified, and it says so
    value = "add.rn.f32 %f3, %f1, 0f4B800000;\n\tsub.rn.f32 %f2, %f3, 0f4B800000;"
    result = verify(tmp_path, cache, value, regs="\t.reg .f32 %f3;")
    assert result["verdict"] == "verified", result
    assert "float.reals" in result["axioms"], result
