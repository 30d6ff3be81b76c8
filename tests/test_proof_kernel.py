"""The proof kernel's rules (semantics/proof): each makes the theorem its docstring states, and refuses
inputs that do not match it or whose side conditions do not hold."""

from __future__ import annotations

import dataclasses

import pytest
import z3

from lean_pool.checker import Z3Checker
from semantics.axioms import ideal
from semantics.comprehension import SUM, sum_over
from semantics.proof import Forged, Refused, Theorem, rules, sums
from semantics.properties.matched_sums import reindex_sum

CHECK = Z3Checker()
T = 10.0
x, y, z = z3.Reals("x y z")
n = z3.BitVec("n", 64)
a = z3.Array("a", z3.BitVecSort(64), z3.RealSort())


def smt(claim: z3.BoolRef) -> Theorem:
    return rules.by_smt(claim, CHECK, T, "test", "test")


def test_by_smt_proves_a_valid_formula_and_refuses_an_invalid_one_with_its_model():
    th = smt(z3.Implies(x > 1, x > 0))
    assert th.states(z3.Implies(x > 1, x > 0)) and th.rule == "by_smt" and len(th.evidence) == 1
    with pytest.raises(Refused) as refused:
        rules.by_smt(x > 0, CHECK, T, "positive", "test", witness={"x": x})
    assert refused.value.outcome.status == "refuted" and refused.value.outcome.model["x"] <= 0


def test_by_smt_checks_a_failure_formula_as_the_obligation_itself():
    failure = z3.And(x > 1, x < 0)
    th = smt(z3.Not(failure))
    assert th.evidence[0][0].formula.eq(failure)


def test_by_smt_with_facts_lists_the_axiom_instances_it_rests_on():
    exp = ideal("exp")
    th = rules.by_smt(exp(x) > 0, CHECK, T, "exp positive", "test", with_facts=True)
    assert th.axioms and th.states(exp(x) > 0)
    with pytest.raises(Refused):   # without the facts, exp is uninterpreted
        rules.by_smt(exp(x) > 0, CHECK, T, "exp positive", "test")


def test_a_theorem_cannot_be_constructed_outside_the_kernel():
    with pytest.raises(Forged):
        Theorem(x == x)
    with pytest.raises(Forged):   # nor by editing a real one
        dataclasses.replace(smt(x == x), conclusion=x == y)


def test_mp_and_its_refusal_of_a_premise_that_is_not_the_antecedent():
    b = rules.mp(smt(z3.Implies(x > 1, x > 0)), rules.assume(x > 1))
    assert b.conclusion.eq(x > 0) and b.hypotheses[0].eq(x > 1) and not b.states(x > 0)
    with pytest.raises(Refused):
        rules.mp(smt(z3.Implies(x > 1, x > 0)), rules.assume(x > 2))
    with pytest.raises(Refused):
        rules.mp(smt(x == x), rules.assume(x > 2))


def test_disch_turns_a_hypothesis_into_an_antecedent():
    th = rules.disch(x > 1, rules.mp(smt(z3.Implies(x > 1, x > 0)), rules.assume(x > 1)))
    assert th.states(z3.Implies(x > 1, x > 0))


def test_conj_joins_its_conjuncts_and_refuses_none():
    both = rules.conj(smt(x == x), smt(y == y))
    assert both.states(z3.And(x == x, y == y))
    with pytest.raises(Refused):
        rules.conj()


def test_instantiate_a_free_symbol_and_refuse_a_non_symbol_or_a_wrong_sort():
    th = rules.instantiate(smt(x + 0 == x), x, y * 2)
    assert th.states(y * 2 + 0 == y * 2)
    with pytest.raises(Refused):
        rules.instantiate(th, y * 2, z)
    with pytest.raises(Refused):
        rules.instantiate(th, y, n)


def test_sym_and_trans_of_equalities():
    ab = rules.assume(x == y)
    bc = rules.assume(y == z)
    assert rules.trans(ab, bc).conclusion.eq(x == z)
    assert rules.sym(ab).conclusion.eq(y == x)
    with pytest.raises(Refused):
        rules.trans(bc, ab)
    with pytest.raises(Refused):
        rules.sym(smt(x > x - 1))


def test_substitute_equals_for_equals_everywhere_or_in_a_template():
    eq = smt(x + x == 2 * x)
    p = smt(z3.Implies(x + x > 0, x + x >= 0))
    assert rules.substitute(eq, p).states(z3.Implies(2 * x > 0, 2 * x >= 0))
    hole = z3.Real("hole")
    only_left = rules.substitute(eq, p, hole, z3.Implies(hole > 0, x + x >= 0))
    assert only_left.states(z3.Implies(2 * x > 0, x + x >= 0))
    with pytest.raises(Refused):   # the template at a is not the premise
        rules.substitute(eq, p, hole, z3.Implies(hole > 1, x + x >= 0))


def test_substitute_with_an_unproved_equality_stays_conditional():
    th = rules.substitute(rules.assume(x == y), smt(x == x))
    assert th.conclusion.eq(y == y) and th.hypotheses[0].eq(x == y)
    assert not th.states(y == y)
    with pytest.raises(Refused):
        rules.substitute(smt(z3.Implies(x == y, x == y)), smt(x == x))


j = z3.BitVec("j", 64)
i = z3.BitVec("i", 64)


def test_reindex_sum_by_a_reversal_of_the_range():
    source = SUM(z3.BitVecVal(0, 64), n, a)
    target = sum_over(0, n, j, a[n - 1 - j])
    th = reindex_sum(source, target, (j, n - 1 - j), (i, n - 1 - i), CHECK, T)
    assert th.states(source == target)
    assert len(th.evidence) == 4


def test_reindex_sum_refuses_a_swapped_bijection():
    # φ and ψ of a 2-D tile swapped: j ↦ (j mod 4)·8 + j / 4 maps [0, 32) onto [0, 32) only when the
    # strides match the shape; here the proposed target body reads the transposed element
    source = SUM(z3.BitVecVal(0, 64), z3.BitVecVal(32, 64), a)
    phi = (j, z3.URem(j, 8) * 4 + z3.UDiv(j, 8))
    psi = (i, z3.URem(i, 8) * 4 + z3.UDiv(i, 8))   # should be (i mod 4)·8 + i / 4
    target = sum_over(0, 32, j, a[z3.URem(j, 8) * 4 + z3.UDiv(j, 8)])
    with pytest.raises(Refused) as refused:
        reindex_sum(source, target, phi, psi, CHECK, T)
    assert "onto" in str(refused.value) or "into" in str(refused.value)
    good_psi = (i, z3.URem(i, 4) * 8 + z3.UDiv(i, 4))
    assert reindex_sum(source, target, phi, good_psi, CHECK, T).states(source == target)


def test_reindex_sum_refuses_a_map_that_is_not_injective_or_a_body_that_does_not_match():
    source = SUM(z3.BitVecVal(0, 64), z3.BitVecVal(4, 64), a)
    twice = sum_over(0, 8, j, a[z3.UDiv(j, 2)])
    with pytest.raises(Refused, match="injective"):
        reindex_sum(source, twice, (j, z3.UDiv(j, 2)), (i, i * 2), CHECK, T)
    shifted = sum_over(0, 4, j, a[j + 1])
    with pytest.raises(Refused, match="into|body"):
        reindex_sum(source, shifted, (j, j), (i, i), CHECK, T)


def test_reindex_sum_under_a_condition():
    m = z3.BitVec("m", 64)
    source = SUM(z3.BitVecVal(0, 64), n, a)
    target = SUM(z3.BitVecVal(0, 64), m, a)
    th = reindex_sum(source, target, (j, j), (i, i), CHECK, T, under=n == m)
    assert th.states(z3.Implies(n == m, source == target))
    with pytest.raises(Refused):
        reindex_sum(source, target, (j, j), (i, i), CHECK, T)


def test_split_range_and_its_refusal_of_a_point_outside_the_range():
    m = z3.BitVec("m", 64)
    whole = SUM(z3.BitVecVal(0, 64), n, a)
    th = sums.split_range(whole, m, CHECK, T, under=z3.ULE(m, n))
    assert th.states(z3.Implies(z3.ULE(m, n), whole == SUM(z3.BitVecVal(0, 64), m, a) + SUM(m, n, a)))
    with pytest.raises(Refused, match="lo ≤ m ≤ hi"):
        sums.split_range(whole, m, CHECK, T)
    with pytest.raises(Refused):
        sums.split_range(SUM(z3.BitVecVal(4, 64), n, a), z3.BitVecVal(2, 64), CHECK, T, under=z3.UGE(n, 4))
    with pytest.raises(Refused):
        sums.split_range(x + y, m, CHECK, T)


def test_substitute_under_a_condition_and_its_refusals():
    h = x > 0
    eq = smt(z3.Implies(h, x == z3.If(x > 0, x, -x)))        # x = |x| where x > 0
    premise = smt(z3.Not(z3.And(h, x < 0)))
    target = z3.Not(z3.And(h, z3.If(x > 0, x, -x) < 0))
    assert rules.substitute_under(eq, premise, target).states(target)
    with pytest.raises(Refused):   # the target's condition is not the equation's
        rules.substitute_under(eq, premise, z3.Not(z3.And(x > 1, z3.If(x > 0, x, -x) < 0)))
    with pytest.raises(Refused):   # the premise is not the target at a
        rules.substitute_under(eq, smt(z3.Not(z3.And(h, x < -1))), target)
    with pytest.raises(Refused):
        rules.substitute_under(smt(x == x), premise, target)
    assumed = rules.substitute_under(rules.assume(z3.Implies(h, x == -x)), premise, z3.Not(z3.And(h, -x < 0)))
    assert assumed.hypotheses and not assumed.states(z3.Not(z3.And(h, -x < 0)))   # an unproved equation stays
