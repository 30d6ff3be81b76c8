"""Scalar losses accumulated with atomics (issue 15; semantics/properties/atomic_terms.py): each block adds
its shared-memory tree of grid-stride partial sums, divided by n, into a zeroed scalar. The block's value is
split into its terms over (leaf τ, iteration k), folded over τ, and matched against the reference's nest of
Sums by the bijection of semantics/properties/atomics.py.

The end-to-end cases are examples/kernelbench_l1/94_mse_loss at a small shape (8 threads a block, 2 blocks,
4 × 64 elements), compiled by the real nvcc; the native shapes are measured by bench/kernelbench.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import z3

from semantics.comprehension import sum_over
from semantics.properties.atomic_terms import Instance, flat_strides, reference_terms, split

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / "examples" / "kernelbench_l1" / "94_mse_loss"
ONE_ADDER = "if (threadIdx.x == 0) atomicAdd(out, total / n);"


def small_mse(tmp_path: Path, adder: str = ONE_ADDER) -> Path:
    task = tmp_path / "mse"
    shutil.copytree(BASE, task)
    edits = {"kernel.cu": [("#define BS 256", "#define BS 8"), (ONE_ADDER, adder)],
             "lark.toml": [("grid = [65536, 1, 1]", "grid = [2, 1, 1]"), ("block = [256, 1, 1]", "block = [8, 1, 1]"),
                           ("1073741824", "256")],
             "ref.py": [("batch_size = 32768", "batch_size = 4"), ("input_shape = (32768,)", "input_shape = (64,)")]}
    for name, pairs in edits.items():
        text = (task / name).read_text()
        for old, new in pairs:
            assert old in text, (name, old)
            text = text.replace(old, new)
        (task / name).write_text(text)
    return task / "lark.toml"


def lark(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_a_block_tree_of_grid_stride_sums_added_atomically_verifies(tmp_path: Path) -> None:
    result = json.loads(lark("verify", str(small_mse(tmp_path)), "--json").stdout)
    assert result["verdict"] == "verified", result["reason"]
    assert result["properties"]["equivalence"] == "proved"


def test_two_threads_adding_the_block_sum_are_refuted_with_a_replayed_one_hot_witness(tmp_path: Path) -> None:
    manifest = small_mse(tmp_path, "if (threadIdx.x < 2) atomicAdd(out, total / n);")
    witness = tmp_path / "witness.json"
    result = json.loads(lark("verify", str(manifest), "--json", "--witness", str(witness)).stdout)
    assert result["verdict"] == "refuted", result["reason"]
    (finding,) = result["findings"]
    w = finding["witness"]
    assert finding["property"] == "equivalence"
    assert (w["kernel_value"], w["reference_value"]) == (2 / 256, 1 / 256)   # the term added by two threads
    (name,) = w["inputs"]
    buffer, _, index = name.removesuffix("]").partition("[")
    assert buffer in ("predictions", "targets") and 0 <= int(index) < 256 and w["other_inputs"] == 0
    assert lark("check", str(witness)).returncode == 0


def _block_value(x: z3.FuncDeclRef, threads: int, stride: int, hi: int) -> z3.ArithRef:
    """Σ_t (1/n)·Σ_k (x[t + k·stride])², the thread id t a constant in each summand, as a block tree leaves it."""
    k = z3.BitVec("k", 64)
    parts = [sum_over(0, hi, k, x(t + stride * k) * x(t + stride * k)) for t in range(threads)]
    return z3.simplify(z3.Sum(*parts) / 64)


def _unsat(formula: z3.BoolRef, _name: str) -> bool:
    solver = z3.Solver()
    solver.add(formula)
    return solver.check() == z3.unsat


def test_a_block_value_splits_into_one_folded_term_over_its_leaves_and_iterations() -> None:
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    inst = Instance(None, [], z3.BoolVal(True), z3.BoolVal(True), _block_value(x, 8, 16, 4))
    terms = split(inst, _unsat, "t", frozenset({"x"}))
    assert not isinstance(terms, str), terms
    # thread 0's x[16k] has another shape than x[t + 16k]: one fold over the other 7 leaves, and it alone
    assert len(terms) == 2
    assert sorted(count for t in terms for _, count in t.axes) == [7]
    folded = next(t for t in terms if t.axes)
    assert [str(v) for v in folded.variables] == [str(folded.axes[0][0]), "k!t.0.0"]   # τ, then k


def test_a_fold_that_is_not_proved_leaves_the_terms_alone() -> None:
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    terms = split(Instance(None, [], z3.BoolVal(True), z3.BoolVal(True), _block_value(x, 8, 16, 4)),
                  lambda _f, _n: False, "t", frozenset({"x"}))
    assert not isinstance(terms, str) and len(terms) == 8 and all(not t.axes for t in terms)


def test_a_value_with_a_sum_inside_another_operation_is_one_term() -> None:
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    k = z3.BitVec("k", 64)
    inst = Instance(None, [], z3.BoolVal(True), z3.BoolVal(True), z3.Sqrt(sum_over(0, 4, k, x(k))))
    assert split(inst, _unsat, "t", frozenset({"x"})) == [inst]


def test_the_reference_mean_over_two_dimensions_is_indexed_by_a_pair() -> None:
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    a, b = z3.BitVecs("a b", 64)
    ref = reference_terms(sum_over(0, 4, a, sum_over(0, 64, b, x(64 * a + b))))
    assert len(ref.ms) == 2 and flat_strides(ref) == [64, 1]
    m0, m1 = ref.ms
    assert z3.simplify(z3.substitute(ref.h, (m0, z3.BitVecVal(1, 64)), (m1, z3.BitVecVal(2, 64)))).eq(
        x(z3.BitVecVal(66, 64)))
