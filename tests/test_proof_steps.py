"""The proof as data: every kernel rule records on its theorem the step that made it (rule and inputs), the
steps form a DAG whose premises are shared, and replaying a step through the kernel makes the same theorem."""

from __future__ import annotations

import inspect

import pytest
import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import sum_over
from semantics.proof import RULES, Refused, Step, Theorem, indices, replay, rules, sums, unions
from semantics.properties.matched_sums import reindex_sum

CHECK = Z3Checker()
T = 10.0
x, y = z3.Reals("x y")
n = z3.BitVec("n", 64)
a = z3.Array("a", z3.BitVecSort(64), z3.RealSort())


def smt(claim: z3.BoolRef) -> Theorem:
    return rules.by_smt(claim, CHECK, T, "test", "test")


def test_every_public_rule_of_the_kernel_is_registered():
    """A function of the kernel's rule modules that returns a Theorem is a rule, and a rule records its step
    only through `@rule`: one missing the decorator would make theorems a certificate cannot hold."""
    for module in (rules, sums, indices, unions):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not name.startswith("_") \
                    and inspect.signature(fn).return_annotation in ("Theorem", Theorem):
                assert RULES.get(name) is fn, f"{module.__name__}.{name} is not declared with @rule"


def test_a_step_records_the_rule_and_its_inputs_but_not_the_checker():
    claim = z3.Implies(x > 1, x > 0)
    th = smt(claim)
    assert th.step.rule == "by_smt"
    inputs = dict(th.step.inputs)
    assert inputs["claim"] is claim and inputs["name"] == "test" and inputs["prop"] == "test"
    assert "checker" not in inputs and "timeout_s" not in inputs


def test_premises_are_shared_not_copied():
    p = smt(x == x)
    both = rules.conj(p, p)
    assert both.step == Step("conj", (("theorems", (p, p)),))
    assert [id(t) for t in both.step.premises()] == [id(p), id(p)]
    assert both.evidence == p.evidence + p.evidence


def test_a_tactic_that_calls_a_rule_leaves_the_rules_step_which_replays_to_the_same_theorem():
    j, k = z3.BitVec("j", 64), z3.BitVec("k", 64)
    source, target = sum_over(0, n, j, a[j]), sum_over(0, n, k, a[n - 1 - k])
    th = reindex_sum(source, target, (k, n - 1 - k), (j, n - 1 - j), CHECK, T)
    assert th.rule == "reindex_lanes" and th.step.rule == "reindex_lanes" and "reindex_sum" not in RULES
    again = replay(th.step, CHECK, T)
    assert again.conclusion.eq(th.conclusion) and again.rule == "reindex_lanes"


@pytest.mark.parametrize("make", [
    lambda: rules.conj(smt(x == x), smt(y == y)),
    lambda: rules.mp(smt(z3.Implies(x > 1, x > 0)), rules.assume(x > 1)),
    lambda: rules.disch(x > 1, rules.mp(smt(z3.Implies(x > 1, x > 0)), rules.assume(x > 1))),
    lambda: rules.instantiate(smt(x + 0 == x), x, y * 2),
    lambda: rules.sym(smt(x + 1 == 1 + x)),
    lambda: sums.split_range(sum_over(0, n, z3.BitVec("j", 64), a[z3.BitVec("j", 64)]), n, CHECK, T),
    lambda: indices.ordered_multiples(z3.BitVec("u", 8), z3.BitVec("v", 8), 3, 16),
])
def test_replaying_a_step_makes_the_same_theorem(make):
    th = make()
    again = replay(th.step, CHECK, T)
    assert again.conclusion.eq(th.conclusion) and again.rule == th.rule
    assert [h.get_id() for h in again.hypotheses] == [h.get_id() for h in th.hypotheses]


def test_replay_refuses_inputs_that_are_not_the_rules_parameters_or_do_not_match():
    with pytest.raises(Refused, match="do not fit"):
        replay(Step("mp", (("implication", smt(x == x)),)), CHECK, T)
    with pytest.raises(Refused):   # a rule applied to a premise it does not match
        replay(Step("mp", (("implication", smt(z3.Implies(x > 1, x > 0))), ("premise", smt(x == x)))), CHECK, T)
    with pytest.raises(Refused):   # a claim that does not hold
        replay(Step("by_smt", (("claim", x > 0), ("name", "n"), ("prop", "p"))), CHECK, T)
    with pytest.raises(KeyError):
        replay(Step("no_such_rule", ()), CHECK, T)
