"""The lemma cache: facts only, keyed by canonical content, backend and axiom-table version; hits reach the
JSON stats of `lark verify`."""

from __future__ import annotations

import z3

from lean_pool.cache import CachingChecker, DiskLemmaStore, cache_key
from lean_pool.canonical import canonical_text
from lean_pool.checker import PROVED, REFUTED, UNKNOWN, Obligation, Outcome, Z3Checker
from orchestrator.job import run_verify
from semantics import axioms
from tests.tiny_tasks import write_task


class Counting:
    """Z3 in-process, counting how often it is really asked; or a fixed `unknown`."""

    name = "z3"

    def __init__(self, unknown: bool = False):
        self.calls = 0
        self.unknown = unknown

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        self.calls += 1
        if self.unknown:
            return Outcome(UNKNOWN, self.name, 1.0, reason="z3: timeout")
        return Z3Checker().check(obligation, timeout_s)


def fresh_obligation(witness: str = "x") -> Obligation:
    """Built from fresh constants each time, as the property checks do: equal structure, new names."""
    x, y = z3.FreshConst(z3.BitVecSort(32), "x"), z3.FreshConst(z3.BitVecSort(32), "k")
    return Obligation("probe", "test", z3.And(z3.UGT(x, 5), z3.ULT(x, 7), y == x + 1), {witness: x})


def test_second_run_hits_across_stores_on_one_directory(tmp_path):
    inner = Counting()
    first = CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30)
    second = CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30)
    assert inner.calls == 1
    assert (first.status, first.cached, first.model) == (REFUTED, False, {"x": 6})
    assert (second.status, second.cached, second.model, second.seconds) == (REFUTED, True, {"x": 6}, 0.0)

    proved = Obligation("p", "test", z3.BitVec("a", 8) != z3.BitVec("a", 8))
    checker = CachingChecker(inner, DiskLemmaStore(tmp_path))
    assert [checker.check(proved, 30).status for _ in range(2)] == [PROVED, PROVED]
    assert inner.calls == 2


def test_unknown_is_never_cached(tmp_path):
    inner = Counting(unknown=True)
    checker = CachingChecker(inner, DiskLemmaStore(tmp_path))
    assert [checker.check(fresh_obligation(), 30).status for _ in range(2)] == [UNKNOWN, UNKNOWN]
    assert inner.calls == 2
    assert len(DiskLemmaStore(tmp_path)) == 0


def test_key_changes_with_axiom_version_and_backend(tmp_path, monkeypatch):
    text = canonical_text(fresh_obligation())
    keys = {cache_key(text, "z3", "1"), cache_key(text, "z3", "2"), cache_key(text, "cvc5", "1")}
    assert len(keys) == 3

    inner = Counting()
    CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30)
    monkeypatch.setattr(axioms, "AXIOM_TABLE_VERSION", axioms.AXIOM_TABLE_VERSION + "-next")
    again = CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30)
    assert (again.cached, inner.calls) == (False, 2)


def test_canonical_text_ignores_names_but_not_structure_or_witnesses():
    assert canonical_text(fresh_obligation()) == canonical_text(fresh_obligation())
    assert canonical_text(fresh_obligation("x")) != canonical_text(fresh_obligation("element"))
    x = z3.BitVec("x", 32)
    assert canonical_text(Obligation("a", "t", z3.UGT(x, 5))) != canonical_text(Obligation("a", "t", z3.UGT(x, 6)))
    assert canonical_text(Obligation("a", "t", z3.UGT(x, 5))) != canonical_text(Obligation("a", "t", z3.UGT(5, x)))


def test_cache_hits_reach_the_json_stats(tmp_path, monkeypatch):
    monkeypatch.setenv("LARK_CACHE_DIR", str(tmp_path / "cache"))
    manifest = write_task(tmp_path, "copy", "copy")
    first, second = (run_verify(manifest, 600).to_json() for _ in range(2))
    assert first["verdict"] == second["verdict"] == "verified"
    assert first["stats"]["cache_misses"] > 0
    assert second["stats"]["cache_hits"] == second["stats"]["obligations"] > 0
    assert second["stats"]["cache_misses"] == 0
