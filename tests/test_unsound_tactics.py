"""Deliberately unsound provers plugged into the search (issue 14): a tactic may propose anything, and no wrong
kernel becomes `verified` through it. Each adversary proposes a wrong hint of its kind — a writer of an output
element that does not write it, a loop bound short of the loop's exit, a reindexing of a reduction that drops
or repeats terms, a quotient and remainder that do not divide — in place of every heuristic prover, with no
other strategy to fall back on; the core checks each hint as it checks any, so the buggy twins keep a
non-verified verdict, and a correct kernel is at worst left `unknown`."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3

from orchestrator import job
from semantics.verdict import Provers

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TIMEOUT_S = 240


def _zero_writer(key, index, variables, e):
    return {str(v): z3.BitVecVal(0, v.size()) for v in variables}        # thread 0 of block 0 writes everything


def _short_bound(key, loop):
    return [z3.BitVecVal(1, 64)]                                           # every loop left after one iteration


def _shifted(key, source, source_var, target, target_var):
    return None if source_var is None else source_var + 1                  # a reindexing off by one


def _bad_split(key, dividend, divisor):
    return z3.BitVecVal(0, 64), dividend                                   # quotient 0, remainder all


ADVERSARY = Provers(inverse=_zero_writer, bounds=_short_bound, reindex=_shifted, split=_bad_split)
WRONG = ["loop_matmul_dropped_iteration", "grid_stride_wrong_stride", "shared_block_sum_short_tree",
         "loop_tiled_matmul_wrong_tile_index", "lib_permute_heads_swapped"]
RIGHT = ["loop_matmul_naive_4096", "lib_permute_heads"]


@pytest.fixture
def adversary(monkeypatch):
    monkeypatch.setattr(job, "PROVERS", ADVERSARY)
    monkeypatch.setattr(job, "STRATEGIES", {"bounds": [job.ProverStrategy("bounds", _short_bound)],
                                            "reindex": [job.ProverStrategy("reindex", lambda *a: [_shifted(*a)])]})


@pytest.mark.parametrize("name", WRONG)
def test_no_wrong_kernel_is_verified_through_an_unsound_prover(adversary, name):
    assert (EXAMPLES / name / "EXPECT").read_text().startswith("refuted")
    result = job.run_verify(EXAMPLES / name / "lark.toml", TIMEOUT_S)
    assert result.verdict in ("refuted", "unknown"), (result.verdict, result.reason)


@pytest.mark.parametrize("name", RIGHT)
def test_a_correct_kernel_is_never_refuted_through_an_unsound_prover(adversary, name):
    result = job.run_verify(EXAMPLES / name / "lark.toml", TIMEOUT_S)
    assert result.verdict in ("verified", "unknown"), (result.verdict, result.reason)
    if result.verdict == "unknown":     # it says which hint it lacked, rather than trusting the wrong one
        assert result.reason


def test_the_adversarys_hints_are_asked_and_refused(adversary):
    """The adversary is what the core asks: the permute's writer can only come from the inverse prover, and
    thread 0 of block 0 is refused as the writer of every element, so coverage stays open, naming it."""
    result = job.run_verify(EXAMPLES / "lib_permute_heads" / "lark.toml", TIMEOUT_S)
    assert result.verdict == "unknown" and "every element of y is written" in result.reason, result.reason
