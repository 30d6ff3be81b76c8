"""`verified` needs theorems that state the top goals (semantics.verdict.established), not a flag: a property
check that says `proved` without them, or with theorems of other statements, leaves the task `unknown`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import z3

from lean_pool.checker import Z3Checker
from orchestrator.job import PROVERS
from orchestrator.pipeline import prepare
from semantics import verdict
from semantics.goals import Deferred
from semantics.proof.rules import assume, by_smt
from semantics.properties.common import PROVED, UNKNOWN, PropertyResult

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
x = z3.Int("x")
GOAL = z3.Not(z3.And(x > 1, x < 0))


def _proved(*theorems) -> dict[str, PropertyResult]:
    return {"memory_safety": PropertyResult(PROVED, theorems=list(theorems))}


def test_a_theorem_stating_the_goal_establishes_it():
    results = _proved(by_smt(GOAL, Z3Checker(), 5.0, "goal", "memory_safety"))
    counts = verdict.established(results, {"memory_safety": [("the access", GOAL)]})
    assert results["memory_safety"].state == PROVED and counts["memory_safety"]["stated"] == 1


@pytest.mark.parametrize("theorems", [
    (),                                                                        # a flag, no theorem
    (by_smt(z3.Not(z3.And(x > 2, x < 0)), Z3Checker(), 5.0, "other", "p"),),  # a theorem of another statement
    (assume(GOAL),),                                                           # the goal, but only assumed
])
def test_a_goal_without_its_theorem_is_unknown(theorems):
    results = _proved(*theorems)
    verdict.established(results, {"memory_safety": [("the access", GOAL)]})
    assert results["memory_safety"].state == UNKNOWN
    assert "no kernel theorem states the goal of the access" in results["memory_safety"].reasons


def test_a_goal_with_no_accepted_form_is_never_established():
    results = _proved(by_smt(GOAL, Z3Checker(), 5.0, "goal", "p"))
    verdict.established(results, {"memory_safety": [("coverage without hints", None)]})
    assert results["memory_safety"].state == UNKNOWN


def _verify(name: str):
    return verdict.verify(prepare(EXAMPLES / name / "lark.toml").problem, Z3Checker(), PROVERS)


def test_a_deferred_form_is_stated_only_when_the_first_form_is_not():
    """A goal's `Deferred` alternative (a warp-wide store's race goal: 32 lanes substituted into the stored
    value) is built only where no theorem states the first form, and then establishes the goal like any form."""
    built = []

    def wide():
        built.append(1)
        return GOAL
    other = z3.Not(z3.And(x > 2, x < 0))
    results = _proved(by_smt(other, Z3Checker(), 5.0, "goal", "memory_safety"))
    verdict.established(results, {"memory_safety": [("the site", (other, Deferred(wide)))]})
    assert results["memory_safety"].state == PROVED and built == []
    results = _proved(by_smt(GOAL, Z3Checker(), 5.0, "goal", "memory_safety"))
    counts = verdict.established(results, {"memory_safety": [("the site", (other, Deferred(wide)))]})
    assert results["memory_safety"].state == PROVED and counts["memory_safety"]["stated"] == 1 and built == [1]
    results = _proved(by_smt(GOAL, Z3Checker(), 5.0, "goal", "memory_safety"))
    verdict.established(results, {"memory_safety": [("the site", (other, Deferred(lambda: None)))]})
    assert results["memory_safety"].state == UNKNOWN


def test_relu_is_verified_with_every_goal_stated_exactly():
    report = _verify("relu_64x64")
    assert report.verdict == "verified"
    for prop in ("memory_safety", "race_freedom", "equivalence"):
        assert report.goals[prop]["goals"] > 0
        assert report.goals[prop]["stated"] == report.goals[prop]["goals"], prop


@pytest.mark.parametrize("prop", ["memory_safety", "race_freedom", "equivalence", "coverage"])
def test_a_property_check_that_claims_proved_without_theorems_does_not_verify(prop):
    """An unsound tactic plugged in (it skips its obligations and says proved) cannot make relu verified."""
    unsound = dataclasses.replace(verdict.TACTICS, **{prop: lambda *args, **kwargs: PropertyResult(PROVED)})
    report = verdict.verify(prepare(EXAMPLES / "relu_64x64" / "lark.toml").problem, Z3Checker(), PROVERS,
                            tactics=unsound)
    assert report.verdict == "unknown"
    assert "no kernel theorem states the goal" in report.reason


def test_a_lane_met_in_rewritten_form_needs_the_goals_own_hypothesis():
    """A theorem about the tactics' rewritten comparison is accepted (and counted) only under the goal's
    hypothesis: one proved under a stronger hypothesis says nothing about the other threads."""
    v, s = z3.Reals("v s")
    goal = z3.Not(z3.And(x > 0, v != 2 * v - v))
    same = by_smt(z3.Not(z3.And(x > 0, s != s)), Z3Checker(), 5.0, "named", "equivalence")
    stronger = by_smt(z3.Not(z3.And(x > 5, s != s)), Z3Checker(), 5.0, "named", "equivalence")
    for theorem, state in ((same, PROVED), (stronger, UNKNOWN)):
        results = {"equivalence": PropertyResult(PROVED, theorems=[theorem], rewritten={goal.get_id(): theorem})}
        counts = verdict.established(results, {"equivalence": [("the lane", goal)]})
        assert results["equivalence"].state == state
        assert counts["equivalence"]["rewritten"] == (state == PROVED)
