"""`semantics.concrete.reproduce`: a wrong-value witness reproduces only when the interpreter's final value and
the reference's differ and are the recorded ones; the zero-fill-then-overwrite kernel's zero is not final."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.pipeline import prepare
from semantics.concrete.reproduce import reproduce
from semantics.properties.common import Finding
from semantics.ptx.ast import Instr

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def store_lines(problem) -> list[int]:
    return [i.line for i in problem.kernel.body if isinstance(i, Instr) and i.opcode == "st" and ".global" in i.mods]


def wrong_value(line: int, inputs: dict, kernel_value: float, reference_value: float) -> Finding:
    return Finding("equivalence", "", {"block": [0, 0, 0], "thread": [0, 0, 0], "buffer": "y", "element_index": 0,
                                       "inputs": inputs, "kernel_value": kernel_value,
                                       "reference_value": reference_value, "line": line})


@pytest.fixture(scope="module")
def zero_fill():
    return prepare(EXAMPLES / "zero_fill_then_overwrite" / "lark.toml").problem


def test_a_zero_another_thread_overwrites_after_the_barrier_is_not_final(zero_fill):
    first_store = store_lines(zero_fill)[0]
    ok, detail = reproduce(zero_fill, wrong_value(first_store, {"x[0]": 2.0}, 0.0, 2.0))
    assert not ok and "ends as 2" in detail and "reference's 2" in detail


def test_equal_values_are_no_witness(zero_fill):
    ok, detail = reproduce(zero_fill, wrong_value(store_lines(zero_fill)[0], {"x[0]": -1.0}, 0.0, 0.0))
    assert not ok and "ends as 0" in detail


@pytest.fixture(scope="module")
def short_tree():
    return prepare(EXAMPLES / "shared_block_sum_short_tree" / "lark.toml").problem


def test_a_short_tree_loses_the_odd_threads_sums(short_tree):
    # every x is 1: threads sum the columns congruent to their id mod 256, the tree keeps only even threads
    (line,) = store_lines(short_tree)
    ok, detail = reproduce(short_tree, wrong_value(line, {"x[*]": 1.0}, 50000.0, 100000.0))
    assert ok, detail
    ok, detail = reproduce(short_tree, wrong_value(line, {"x[*]": 1.0}, 50001.0, 100000.0))
    assert not ok and "not the recorded" in detail


def test_a_difference_between_tiny_values_is_a_difference(short_tree):
    """The comparison is relative: every x = 1e-20 sums to 5e-16 where the reference has 1e-15 (a softmax's
    tail elements are this small); an absolute tolerance of 1e-6 called them equal."""
    (line,) = store_lines(short_tree)
    ok, detail = reproduce(short_tree, wrong_value(line, {"x[*]": 1e-20}, 5e-16, 1e-15))
    assert ok, detail
    ok, detail = reproduce(short_tree, wrong_value(line, {"x[*]": 0.0}, 0.0, 0.0))
    assert not ok and "ends as 0" in detail


def test_a_witness_naming_an_unknown_input_is_rejected(short_tree):
    (line,) = store_lines(short_tree)
    ok, detail = reproduce(short_tree, wrong_value(line, {"z[3]": 1.0}, 50000.0, 100000.0))
    assert not ok and "z[3]" in detail


def test_lark_check_reproduces_a_shared_read_witness(tmp_path):
    """`lark check` on a shared-memory finding (it failed with a KeyError before the interpreter checked it)."""
    import subprocess
    import sys
    witness = tmp_path / "w.json"
    cli = [sys.executable, "-c", "from orchestrator.cli import main; main()"]
    verify = subprocess.run([*cli, "verify", str(EXAMPLES / "shared_uninitialized_read" / "lark.toml"), "--json",
                             "--witness", str(witness)], capture_output=True, text=True, timeout=900)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    check = subprocess.run([*cli, "check", str(witness)], capture_output=True, text=True, timeout=900)
    assert check.returncode == 0 and "witness reproduces" in check.stdout, check.stdout + check.stderr
