"""The per-job search (orchestrator/search.py) on real z3: alternatives best-first, counterexamples back to the
strategy, bounded retries, budgets, cancellation of losers; on a real local Ray through checker actors; and in
`lark verify`, where it searches loop bounds and reports its statistics, with certificates still checking."""

from __future__ import annotations

import json
import time
from pathlib import Path

import z3
from click.testing import CliRunner

from lean_pool.budget import Budget
from lean_pool.checker import PROVED, Checker, Obligation, Outcome, Z3Checker
from lean_pool.stack import assemble
from orchestrator.checking import run_check
from orchestrator.cli import main
from orchestrator.job import PROVERS, run_verify
from orchestrator.pipeline import prepare
from orchestrator.search import Counterexample, Goal, Search
from semantics.verdict import verify

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
X = z3.BitVec("x", 8)
DIGIT = z3.URem(X, 10)


def digit_bound(c: int) -> list[Obligation]:
    """`x % 10 <= c` for every 8-bit x: refuted (with x and its digit as witness) unless c >= 9."""
    return [Obligation(f"x % 10 <= {c}", "test", z3.UGT(DIGIT, c), {"x": X, "value": DIGIT})]


def factoring() -> Obligation:
    """Hard for z3 (a 150-bit semiprime through a bit-blasted multiplier): runs until stopped."""
    p, q = 2**61 - 1, 2**89 - 1
    a, b = z3.BitVec("a", 160), z3.BitVec("b", 160)
    return Obligation("factor", "test", z3.And(a * b == p * q, z3.UGT(a, 1), z3.UGT(b, 1),
                                                z3.ULT(a, 2**62), z3.ULT(b, 2**90)))


def goal(obligations=digit_bound, timeout_s: float = 60.0) -> Goal:
    return Goal("digit", "digit:bound", (), obligations, timeout_s)


class Listed:
    """Proposes a fixed list; answers each counterexample with `refine(counterexample)`, and keeps them."""

    name = "listed"

    def __init__(self, hints: list, refine=None):
        self.hints = hints
        self._refine = refine
        self.counterexamples: list[Counterexample] = []

    def propose(self, goal: Goal) -> list:
        return list(self.hints)

    def refine(self, goal: Goal, hint, counterexample: Counterexample) -> list:
        self.counterexamples.append(counterexample)
        return self._refine(counterexample) if self._refine else []


class Recording:
    """Real z3, remembering every outcome by obligation name."""

    def __init__(self, inner: Checker):
        self.inner = inner
        self.name = inner.name
        self.outcomes: dict[str, Outcome] = {}
        self.in_flight = 0

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        self.in_flight += 1
        outcome = self.inner.check(obligation, timeout_s)
        self.outcomes[obligation.name] = outcome
        self.in_flight -= 1
        return outcome


def test_a_wrong_first_candidate_then_a_right_one_closes_the_goal():
    for width in (1, 2):
        with Search(Z3Checker(), {"digit": [Listed([3, 9])]}, width=width) as search:
            closed = search.close(goal())
        assert closed.proved and closed.hint == 9 and closed.strategy == "listed"
        assert search.stats.candidates == 2 and search.stats.refuted == 1 and search.stats.closed == 1


def test_the_counterexample_reaches_the_strategy_and_its_refinement_closes_the_goal():
    strategy = Listed([3], refine=lambda cex: [9])
    with Search(Z3Checker(), {"digit": [strategy]}) as search:
        closed = search.close(goal())
    assert closed.hint == 9 and search.stats.retries == 1
    [cex] = strategy.counterexamples
    assert cex.obligation == "x % 10 <= 3"
    assert cex.values["value"] == cex.values["x"] % 10 > 3           # a real counterexample to the hint
    assert cex.model is not None and cex.model.eval(DIGIT).as_long() == cex.values["value"]


def test_rank_not_speed_picks_the_winner_and_a_refinement_ranks_right_after_its_parent():
    """3 is refuted; its refinement (digit + 100) is right and ranks before 9, which is right too and may be
    proved first: the refinement wins, at every width."""
    for width in (1, 3):
        strategy = Listed([3, 9, 20], refine=lambda cex: [cex.values["value"] + 100])
        with Search(Z3Checker(), {"digit": [strategy]}, width=width) as search:
            closed = search.close(goal())
        assert closed.hint == strategy.counterexamples[0].values["value"] + 100


def test_retries_are_bounded():
    strategy = Listed([0], refine=lambda cex: [cex.values["value"] - 1])   # always one short
    with Search(Z3Checker(), {"digit": [strategy]}, max_retries=2) as search:
        closed = search.close(goal())
    assert not closed.proved and "no candidate" in closed.reason
    assert search.stats.retries == 2 and len(strategy.counterexamples) == 2 and search.stats.refuted == 3


def test_cancellation_stops_the_losers():
    checker = Recording(Z3Checker())

    def obligations(hint):
        return digit_bound(9) if hint == "easy" else [factoring()]

    start = time.monotonic()
    with Search(checker, {"digit": [Listed(["easy", "hard"])]}, width=2) as search:
        closed = search.close(goal(obligations, timeout_s=120.0))
        assert checker.in_flight == 0     # no search thread still in z3 once the goal is closed
    assert closed.hint == "easy"
    assert search.stats.cancelled == 1
    assert time.monotonic() - start < 60.0                     # the 120 s factoring query was interrupted
    hard = checker.outcomes.get("factor")
    assert hard is None or (hard.status != PROVED and hard.reason in ("cancelled", "z3: interrupted"))


def test_a_wall_budget_stops_the_search_and_is_named():
    budget = Budget(wall_s=2.0)
    start = time.monotonic()
    with Search(assemble(Z3Checker(), None, budget), {"digit": [Listed(["hard"])]}, budget) as search:
        closed = search.close(goal(lambda _: [factoring()], timeout_s=120.0))
    assert not closed.proved and "wall-time budget of 2 s exhausted" in closed.reason
    assert search.stats.stopped and time.monotonic() - start < 60.0


def test_a_solver_budget_leaves_a_job_unknown_naming_the_budget():
    budget = Budget(solver_s=0.001)
    result = run_verify(EXAMPLES / "loop_rowsum_per_thread" / "lark.toml", 600.0,
                        checker=assemble(Z3Checker(), None, budget), budget=budget)
    assert result.verdict == "unknown"
    assert result.reason.startswith("solver-time budget of 0.001 s exhausted")


def test_the_solver_budget_is_a_verify_flag(tmp_path, monkeypatch):
    """`lark verify --solver-seconds` (a fresh lemma cache, so the solver really runs)."""
    monkeypatch.setenv("LARK_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["verify", str(EXAMPLES / "loop_rowsum_per_thread" / "lark.toml"), "--json",
                                       "--solver-seconds", "0.001"])
    out = json.loads(result.output)
    assert result.exit_code == 2 and out["verdict"] == "unknown"
    assert out["reason"].startswith("solver-time budget of 0.001 s exhausted")


def test_verify_searches_loop_bounds_and_its_certificate_still_checks(tmp_path):
    result = run_verify(EXAMPLES / "loop_rowsum_per_thread" / "lark.toml", 600.0,
                        certificate=tmp_path / "proof.json")
    assert result.verdict == "verified"
    search = result.stats["search"]
    assert search["goals"] >= 1 and search["closed"] == search["goals"] and search["candidates_tried"] >= 1
    status, text = run_check(tmp_path / "proof.json", "z3")
    assert status == 0, text


def test_a_reduction_reindexing_is_searched_among_pairings_of_its_reads(tmp_path):
    """x[c] · x[c + n/2] against the reference's x[c + n/2] · x[c]: the prover's first pairing of reads is
    wrong, so without a search the matcher fails (unknown); the job's search finds a right pairing among the
    alternatives (refuting at least one), the core proves it, and the certificate records the winner (a
    `:phi` hint) and re-checks."""
    manifest = EXAMPLES / "loop_half_shift_product" / "lark.toml"
    alone = verify(prepare(manifest).problem, Z3Checker(), PROVERS)
    assert alone.verdict == "unknown" and alone.properties["equivalence"] == "unknown"

    result = run_verify(manifest, 600.0, certificate=tmp_path / "proof.json")
    search = result.stats["search"]
    assert result.verdict == "verified" and search["refuted"] >= 1 and search["closed"] >= 1
    assert any(":phi" in key for key in json.loads((tmp_path / "proof.json").read_text())["hints"])
    status, text = run_check(tmp_path / "proof.json", "z3")
    assert status == 0, text


def test_alternatives_are_checked_in_parallel_on_ray_checker_actors():
    import ray

    from actors.checker import CheckerActor, RemoteChecker
    from lean_pool.pool import PoolConfig

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        actors = [CheckerActor.remote(PoolConfig(size=1)) for _ in range(2)]
        strategy = Listed([3, 5], refine=lambda cex: [9] if cex.obligation == "x % 10 <= 5" else [])
        with Search(RemoteChecker(actors), {"digit": [strategy]}, width=2) as search:
            closed = search.close(goal())
        assert closed.hint == 9
        assert {c.obligation for c in strategy.counterexamples} == {"x % 10 <= 3", "x % 10 <= 5"}
        assert all(c.values["value"] == c.values["x"] % 10 for c in strategy.counterexamples)
        served = sum(h["stats"].get("solved", 0) for h in ray.get([a.health.remote() for a in actors]))
        assert served == 3 and all(ray.get([a.health.remote() for a in actors]))

        # The loser's query is stopped inside the actor: its pool worker is killed, not left to its timeout.
        checker = Recording(RemoteChecker(actors))
        start = time.monotonic()
        with Search(checker, {"digit": [Listed(["easy", "hard"])]}, width=2) as search:
            closed = search.close(goal(lambda hint: digit_bound(9) if hint == "easy" else [factoring()], 300.0))
        assert closed.hint == "easy" and search.stats.cancelled == 1
        assert time.monotonic() - start < 120.0
        hard = checker.outcomes.get("factor")
        assert hard is None or (hard.status != PROVED and hard.reason.startswith("cancelled"))
    finally:
        ray.shutdown()
