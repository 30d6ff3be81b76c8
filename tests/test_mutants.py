"""Mutants of the correct examples (bench/mutation): operators rewrite code only, the filter keeps what the
concrete interpreter shows to differ, and LARK verifies none of the kept mutants."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.mutation.concrete_run import outcome
from bench.mutation.filter import decide
from bench.mutation.generate import EXAMPLES, generate
from bench.mutation.operators import apply, edits
from bench.mutation.text import Source
from orchestrator.job import run_verify
from orchestrator.pipeline import prepare

CUDA = """// a < b and __syncthreads(); in a comment change nothing
extern "C" __global__ void k(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i > 0) atomicAdd(y, 1.0f);
    __syncthreads();
}
"""
TRITON_LOAD = ("@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n"
               "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n")


def mutated(text: str, language: str, operator: str) -> list[str]:
    src = Source(text, language)
    return [apply(text, e) for e in edits(src, operator)]


def test_operators_rewrite_code_not_comments() -> None:
    for operator in ("drop_barrier", "flip_comparison", "change_constant", "shift_index"):
        for text in mutated(CUDA, "cuda", operator):
            assert text.splitlines()[0] == CUDA.splitlines()[0], operator
    assert mutated(CUDA, "cuda", "drop_barrier")[0].count("__syncthreads") == 1   # the comment's one is left
    assert "(*(y) += (1.0f))" in mutated(CUDA, "cuda", "atomic_to_plain")[0]
    guards = mutated(CUDA, "cuda", "drop_guard")
    assert {"if (1)" in g for g in guards} == {True, False}
    assert any("if (i > 0)" in g for g in guards) and any("if (i < n)" in g for g in guards)


def test_triton_mask_dropped_with_its_other() -> None:
    [dropped] = mutated(TRITON_LOAD, "triton", "drop_guard")
    assert "x = tl.load(x_ptr + offs)" in dropped
    assert any(".to(tl.float16).to(tl.float32)" in t for t in mutated(TRITON_LOAD, "triton", "half_round_trip"))


def test_generator_writes_task_folders(tmp_path: Path) -> None:
    mutants = generate([EXAMPLES / "shared_block_sum", EXAMPLES / "triton_add_ragged"],
                       ["drop_barrier", "drop_guard"], tmp_path)
    operators = {(m.example, m.operator) for m in mutants}
    assert ("shared_block_sum", "drop_barrier") in operators and ("triton_add_ragged", "drop_guard") in operators
    for m in mutants:
        assert m.manifest.is_file() and m.diff.startswith("---")
        assert f'name = "{m.name}"' in m.manifest.read_text()


def test_kept_mutants_differ_and_none_verifies(tmp_path: Path) -> None:
    pytest.importorskip("semantics.concrete")
    examples = [EXAMPLES / "relu_64x64", EXAMPLES / "atomic_row_mean"]
    mutants = generate(examples, ["shift_index", "flip_comparison", "change_constant", "atomic_to_plain"],
                       tmp_path)
    assert len(mutants) >= 10
    originals = {e.name: prepare(e / "lark.toml") for e in examples}
    baselines = {name: outcome(p.problem, whole_blocks=True) for name, p in originals.items()}
    kept = [m for m in mutants if decide(originals[m.example], m.manifest, baselines[m.example]).kind == "differs"]
    assert len(kept) >= 5
    for m in kept:   # kept means shown to differ: deciding again, without the cached baseline, agrees
        assert decide(originals[m.example], m.manifest).kind == "differs", m.name
        assert run_verify(m.manifest, 60.0).verdict != "verified", m.diff
