"""lean_pool: warm solver workers (timeouts, crashes, recycling, memory limit, process groups), the wire
format of obligations with witnesses, in-process models for foreign refutations, and job budgets.

No assertion depends on timing: a test that needs a worker mid-obligation waits until the pool says the
worker is busy on an obligation that no solver finishes in the test's lifetime, and then kills it.
"""

from __future__ import annotations

import contextvars
import os
import signal
import threading
import time
from fractions import Fraction

import pytest
import z3

from lean_pool.budget import CANCELLED, Budget, BudgetChecker
from lean_pool.cancel import CURRENT, CancelToken
from lean_pool.checker import PROVED, REFUTED, UNKNOWN, Obligation, Outcome, Z3Checker
from lean_pool.local_model import LocalModels
from lean_pool.pool import Pool, PoolChecker, PoolConfig

X, Y = z3.BitVecs("x y", 64)
EASY_PROVED = Obligation("easy", "test", z3.And(X == 1, X == 2))
EASY_REFUTED = Obligation("sat", "test", z3.And(z3.UGT(X, 5), z3.ULT(X, 7)), {"x": X})
# Factor a 60-bit semiprime by bit-blasting a 128-bit product: far beyond any timeout used here.
HARD = Obligation("hard", "test", z3.And(z3.ZeroExt(64, X) * z3.ZeroExt(64, Y) == 1000000007 * 998244353,
                                         z3.UGT(X, 1), z3.ULT(X, Y)), {"x": X})


@pytest.fixture
def pool():
    made = []

    def make(**config) -> Pool:
        made.append(Pool(PoolConfig(**config)))
        return made[-1]

    yield make
    for p in made:
        p.close()


def busy_worker(pool: Pool, not_pid: int | None = None) -> int:
    """The pid of the worker busy on an obligation (waits for it; the obligation never finishes)."""
    while True:
        for w in pool.workers():
            if w.busy and w.pid != not_pid:
                return w.pid
        time.sleep(0.01)


def check_in_thread(checker, obligation: Obligation, timeout_s: float) -> tuple[threading.Thread, list[Outcome]]:
    found: list[Outcome] = []
    thread = threading.Thread(target=lambda: found.append(checker.check(obligation, timeout_s)))
    thread.start()
    return thread, found


def test_pooled_answers_carry_witness_values(pool):
    checker = PoolChecker(pool())
    assert checker.check(EASY_PROVED, 30).status == PROVED
    refuted = checker.check(EASY_REFUTED, 30)
    assert (refuted.status, refuted.model, refuted.z3_model) == (REFUTED, {"x": 6}, None)

    r, b = z3.Real("r"), z3.Bool("b")
    exact = checker.check(Obligation("real", "test", z3.And(3 * r == 1, b), {"r": r, "b": b}), 30)
    assert exact.model == {"r": Fraction(1, 3), "b": True}


def test_names_that_smtlib_must_quote_travel(pool):
    """The second thread's symbols are named `tid.x'`: z3 prints that unquoted and cannot read it back."""
    primed = z3.BitVec("tid.x'", 32)
    ob = Obligation("race", "test", z3.And(primed == 7, z3.BitVec("tid.x", 32) != primed), {"thread'.x": primed})
    outcome = PoolChecker(pool()).check(ob, 30)
    assert (outcome.status, outcome.model["thread'.x"]) == (REFUTED, 7)


def test_timeout_is_an_unknown_outcome_and_the_worker_is_replaced(pool):
    p = pool()
    before = p.workers()[0].pid
    outcome = PoolChecker(p).check(HARD, 1.0)
    assert outcome.status == UNKNOWN and "timeout" in outcome.reason
    assert p.stats["timeouts"] == 1 and p.stats["crashes"] == 0
    after = p.workers()
    assert len(after) == 1 and after[0].pid != before
    with pytest.raises(ProcessLookupError):
        os.kill(before, 0)
    assert PoolChecker(p).check(EASY_PROVED, 30).status == PROVED


def test_a_worker_killed_mid_obligation_is_replaced_and_the_obligation_requeued(pool):
    p = pool(max_attempts=2)
    thread, found = check_in_thread(PoolChecker(p), HARD, 600)
    first = busy_worker(p)
    os.kill(first, signal.SIGKILL)
    second = busy_worker(p, not_pid=first)      # the same obligation, requeued on a fresh worker
    os.kill(second, signal.SIGKILL)
    thread.join()
    [outcome] = found
    assert outcome.status == UNKNOWN
    assert "crashed 2 times" in outcome.reason and "SIGKILL" in outcome.reason
    assert p.stats["crashes"] == 2
    assert PoolChecker(p).check(EASY_REFUTED, 30).model == {"x": 6}


def test_a_cancelled_query_kills_its_worker_and_is_not_requeued(pool):
    p = pool(max_attempts=2)
    token = CancelToken()
    found: list[Outcome] = []

    def run() -> None:
        CURRENT.set(token)
        found.append(PoolChecker(p).check(HARD, 600))
    thread = threading.Thread(target=run)
    thread.start()
    pid = busy_worker(p)
    token.cancel()
    thread.join(60)
    assert not thread.is_alive()
    [outcome] = found
    assert outcome.status == UNKNOWN and outcome.reason.startswith("cancelled")
    assert p.stats["cancelled"] == 1 and p.stats["crashes"] == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert [w.pid for w in p.workers()] != [pid]
    assert PoolChecker(p).check(EASY_REFUTED, 30).model == {"x": 6}


def test_an_already_cancelled_caller_uses_no_worker(pool):
    p = pool()
    token = CancelToken()
    token.cancel()
    context = contextvars.copy_context()
    context.run(CURRENT.set, token)
    outcome = context.run(PoolChecker(p).check, EASY_PROVED, 30)
    assert (outcome.status, outcome.reason) == (UNKNOWN, "cancelled")
    assert p.stats["solved"] == 0 and p.workers()[0].served == 0


def test_a_dead_idle_worker_costs_nothing(pool):
    p = pool()
    os.kill(p.workers()[0].pid, signal.SIGKILL)
    outcome = PoolChecker(p).check(EASY_REFUTED, 30)
    assert (outcome.status, outcome.model) == (REFUTED, {"x": 6})
    assert p.stats["crashes"] == 1


def test_workers_are_recycled_after_n_obligations(pool):
    p = pool(recycle_after=2)
    pids = []
    for _ in range(5):
        pids.append(p.workers()[0].pid)
        assert PoolChecker(p).check(EASY_PROVED, 30).status == PROVED
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    assert p.stats["recycled"] == 2


def test_memory_limit(pool):
    p = pool(memory_mb=400)
    assert PoolChecker(p).check(EASY_PROVED, 30).status == PROVED     # the worker has set its limit
    limits = open(f"/proc/{p.workers()[0].pid}/limits").read()
    line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    assert line.split()[3] == str(400 * 1024 * 1024)
    xs = [z3.BitVec(f"x{i}", 32) for i in range(3000)]   # `distinct` of 3000 terms: ~4.5M disequalities
    outcome = PoolChecker(p).check(Obligation("big", "test", z3.Distinct(*xs)), 120)
    assert outcome.status == UNKNOWN and "memory" in outcome.reason
    assert PoolChecker(p).check(EASY_PROVED, 30).status == PROVED


def test_workers_run_in_their_own_session_and_close_kills_them(pool):
    p = pool(size=2)
    pids = [w.pid for w in p.workers()]
    assert len(pids) == 2 and all(os.getsid(pid) == pid for pid in pids)
    p.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_concurrent_callers_share_the_pool(pool):
    checker = PoolChecker(pool(size=2))
    threads = [check_in_thread(checker, EASY_REFUTED, 30) for _ in range(6)]
    for thread, _ in threads:
        thread.join()
    assert [found[0].model for _, found in threads] == [{"x": 6}] * 6


class Canned:
    """A checker answering from a fixed outcome, like a worker or the cache would (no in-process model)."""

    name = "z3"

    def __init__(self, outcome: Outcome):
        self.outcome = outcome
        self.calls = 0

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        self.calls += 1
        return self.outcome


def test_foreign_refutations_get_an_in_process_model_agreeing_with_their_witness():
    i = z3.BitVec("tid.x'", 32)
    ob = Obligation("many", "test", z3.And(z3.UGT(i, 10), z3.ULT(i, 100)), {"i": i})
    outcome = LocalModels(Canned(Outcome(REFUTED, "z3", 0.0, {"i": 42}))).check(ob, 30)
    assert outcome.status == REFUTED and outcome.z3_model is not None
    assert 10 < outcome.model["i"] < 100
    assert outcome.z3_model.eval(i).as_long() == outcome.model["i"]


def test_a_worker_and_an_in_process_repeat_find_the_same_model(pool):
    x, y = z3.Reals("x y")
    ob = Obligation("reals", "test", z3.And(x + 2 * y > 3, x - y < 1, y < 7), {"x": x, "y": y})
    pooled = PoolChecker(pool()).check(ob, 30)
    repeated = LocalModels(Canned(pooled)).check(ob, 30)
    assert repeated.model == pooled.model


def test_a_foreign_refutation_that_does_not_reproduce_is_unknown():
    i = z3.BitVec("i", 32)
    ob = Obligation("none", "test", z3.And(z3.ULT(i, 10), z3.UGT(i, 20)), {"i": i})
    outcome = LocalModels(Canned(Outcome(REFUTED, "z3", 0.0, {"i": 500}))).check(ob, 30)
    assert outcome.status == UNKNOWN and "did not reproduce" in outcome.reason


def test_in_process_outcomes_pass_through_unchanged():
    outcome = LocalModels(Z3Checker()).check(EASY_REFUTED, 30)
    assert outcome.status == REFUTED and outcome.z3_model is not None and outcome.model == {"x": 6}


def test_budget_stops_a_job_with_a_reason():
    inner = Canned(Outcome(PROVED, "z3", 2.0))
    budget = Budget(solver_s=3.0)
    checker = BudgetChecker(inner, budget)
    assert [checker.check(EASY_PROVED, 30).status for _ in range(3)] == [PROVED, PROVED, UNKNOWN]
    assert inner.calls == 2
    assert "solver-time budget of 3 s exhausted" in checker.check(EASY_PROVED, 30).reason

    spent = BudgetChecker(Canned(Outcome(PROVED, "z3", 0.0)), Budget(wall_s=0.0))
    assert "wall-time budget" in spent.check(EASY_PROVED, 30).reason


def test_cancel_turns_every_further_obligation_unknown():
    budget = Budget()
    checker = BudgetChecker(Z3Checker(), budget)
    assert checker.check(EASY_PROVED, 30).status == PROVED
    budget.cancel()
    outcome = checker.check(EASY_PROVED, 30)
    assert (outcome.status, outcome.reason) == (UNKNOWN, CANCELLED)
