"""Online softmax's rescaled sum (issue 16 item 2): the kernel rule `exp_product`, the tactic that proves a
rescaled sum's step through it, the summary's classification and rebasing, the -inf rule of the expf idiom,
and the empty-range definitions the first iteration is checked with. End to end: examples/lib_online_softmax_*.
"""

from __future__ import annotations

import pytest
import z3

from semantics.axioms import AXIOMS, ideal
from semantics.comprehension import MAX_FROM, SUM, max_over, sum_over, without_empty
from semantics.errors import Unsupported
from semantics.proof import Refused
from semantics.proof.exps import exp_product
from semantics.ptx import exp_monomials, neginf, online_sums
from semantics.ptx.accumulators import classify as classify_accumulator

EXP = ideal("exp")
S, M = z3.Reals("S M")
XS = z3.Reals("x0 x1 x2 x3")


def real_max(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)


def updates(rescale: bool = True) -> tuple[z3.ArithRef, z3.ArithRef]:
    """The back-edge values (s, m) of a 4-way unrolled `m_new = max(m, v); s = s·exp(m − m_new) + exp(v − m_new)`
    (or, without `rescale`, `s += exp(v − m_new)`) from the header symbols S, M."""
    m, s = M, S
    for x in XS:
        m_new = real_max(m, x)
        s = (s * EXP(m - m_new) if rescale else s) + EXP(x - m_new)
        m = m_new
    return s, m


# ------------------------------------------------------------------------------------------ the kernel rule

def test_exp_product_states_the_instance_and_rests_on_it():
    a, b, c = z3.Reals("a b c")
    theorem = exp_product(c, (a, b))
    assert theorem.states(c * EXP(a) * EXP(b) == c * EXP(a + b))
    assert theorem.axioms == (theorem.conclusion,)
    assert "exp.add" in AXIOMS


@pytest.mark.parametrize("coefficient, arguments", [
    (z3.RealVal(1), ()),                                   # no factor
    (z3.Int("i"), (z3.Real("a"),)),                        # an integer coefficient
    (z3.RealVal(1), (z3.BitVec("b", 32),)),                # a bit-vector argument
    (z3.RealVal(1), tuple(z3.Real(f"a{i}") for i in range(65))),
])
def test_exp_product_refuses_what_is_not_its_statement(coefficient, arguments):
    with pytest.raises(Refused):
        exp_product(coefficient, arguments)


# ------------------------------------------------------------------------------------------ the tactic

def test_the_unrolled_update_is_proved_rescaled_and_its_theorem_rests_on_exp_add():
    s, m = updates()
    claimed = S * EXP(M - m) + z3.Sum(*[EXP(x - m) for x in XS])
    theorem = exp_monomials.prove_rebased(s, claimed, "test")
    assert theorem is not None and theorem.states(s == claimed)
    assert theorem.axioms, "the exp.add instances are listed"


def test_an_update_that_forgets_to_rescale_is_not_proved_rescaled():
    s, m = updates(rescale=False)
    claimed = S * EXP(M - m) + z3.Sum(*[EXP(x - m) for x in XS])
    assert exp_monomials.prove_rebased(s, claimed, "test") is None


def test_the_expansion_reads_each_monomial_as_a_coefficient_and_an_exponent():
    s, m = updates()
    pairs = exp_monomials.rebased(s, m)
    assert pairs is not None and len(pairs) == 5
    assert sum(1 for c, _ in pairs if z3.eq(c, S)) == 1
    assert {str(a) for c, a in pairs if z3.eq(c, z3.RealVal(1))} == {str(x) for x in XS}


# ------------------------------------------------------------------------------------------ the summary

def max_accumulator():
    _, m = updates()
    acc = classify_accumulator(M, m)
    assert acc is not None and acc.kind == "max"
    return acc


def test_the_rescaled_sum_is_classified_over_its_max():
    s, _ = updates()
    online = online_sums.classify(S, [s], "%m", max_accumulator(), [S, M], "test")
    assert online is not None and online.max_reg == "%m"
    assert {str(a) for a in online.terms} == {str(x) for x in XS}


@pytest.mark.parametrize("variant", ["no rescale", "wrong sign", "reads the max in a term", "two back edges"])
def test_other_updates_are_not_online_sums(variant):
    s, m = updates()
    values = [s]
    if variant == "no rescale":
        values = [updates(rescale=False)[0]]
    elif variant == "wrong sign":
        values = [S * EXP(m - M) + EXP(XS[0] - m)]
    elif variant == "reads the max in a term":
        values = [S * EXP(M - m) + EXP(M - m)]
    else:
        values = [s, S * EXP(M - m)]
    assert online_sums.classify(S, values, "%m", max_accumulator(), [S, M], "test") is None


def test_a_sum_in_the_old_max_is_rebased_by_substitution_and_anything_else_keeps_the_factor():
    m0, mu = z3.Reals("m0 mu")
    j = z3.BitVec("j", 64)
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    in_base = sum_over(0, 256, j, EXP(x(j) - m0)) + EXP(x(z3.BitVecVal(256, 64)) - m0)
    assert z3.eq(online_sums.rebase(in_base, m0, mu), z3.substitute(in_base, (m0, mu)))
    other = sum_over(0, 256, j, EXP(x(j) - m0) * m0)          # m0 outside an exponent
    assert z3.eq(online_sums.rebase(other, m0, mu), other * EXP(m0 - mu))
    assert z3.eq(online_sums.rebase(z3.RealVal(0), m0, mu), z3.RealVal(0))


def test_from_minus_infinity_only_a_zero_start_is_summarised():
    s, _ = updates()
    online = online_sums.classify(S, [s], "%m", max_accumulator(), [S, M], "test")
    k, j = z3.BitVec("k", 64), z3.BitVec("j", 64)
    mu = z3.Real("mu")
    terms = online.terms
    assert online_sums.value_at(online, z3.RealVal(0), neginf.NEG_INF, mu, terms, k, k, j) is not None
    assert online_sums.value_at(online, z3.RealVal(1), neginf.NEG_INF, mu, terms, k, k, j) is None


# ------------------------------------------------------------------------------------------ -inf and ranges

def test_exp_of_a_padded_value_is_zero_where_the_padding_is():
    c, v = z3.Bool("c"), z3.Real("v")
    result = neginf.unary("exp", z3.If(c, v, neginf.NEG_INF), EXP, "test")
    assert z3.eq(result, z3.If(c, EXP(v), z3.RealVal(0)))
    assert z3.eq(neginf.unary("exp", neginf.NEG_INF, EXP, "test"), z3.RealVal(0))
    with pytest.raises(Unsupported, match="-inf"):
        neginf.unary("exp.f64", neginf.NEG_INF, EXP, "test")   # the f64 sequence is not checked at -inf
    with pytest.raises(Unsupported, match="-inf"):
        neginf.unary("log", neginf.NEG_INF, EXP, "test")


def test_empty_comprehensions_take_their_defined_values():
    j = z3.BitVec("j", 64)
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    a = z3.Real("a")
    empty_sum, empty_max = sum_over(0, 0, j, x(j)), max_over(a, 1, 0, j, x(j))
    assert z3.eq(without_empty(empty_sum + empty_max), z3.RealVal(0) + a)
    full = sum_over(0, 4, j, x(j))
    assert z3.eq(without_empty(full), full)
    assert full.decl() == SUM and empty_max.decl() == MAX_FROM
