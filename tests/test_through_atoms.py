"""Side conditions through the kernel (semantics.checkers.Through) read comprehensions as atoms first: cvc5 cannot
read a lambda (a Sum's body), so an obligation over Sums that holds whatever their values are must be proved in
a form cvc5 re-proves (`lark check --solver both`; a Triton warp's lanes store one value, the same Sums in a
butterfly's order), and its theorem must state the obligation exactly, as `Known` looks it up in `lark check`.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Obligation, Z3Checker
from lean_pool.cvc5_checker import Cvc5Checker
from semantics.checkers import Known, Through
from semantics.comprehension import sum_over

J = z3.BitVec("j", 64)
X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
W = z3.BitVec("w", 64)


def _sums() -> tuple[z3.ArithRef, z3.ArithRef]:
    return sum_over(0, 32, J, X(J + W)), sum_over(0, 32, J, X(J * 2 + W))


def test_an_obligation_that_holds_of_any_sums_is_proved_by_cvc5_and_stated_exactly() -> None:
    a, b = _sums()
    ob = Obligation("lanes store one value", "race_freedom", (a + b) != (b + a) + 0)
    assert Cvc5Checker().check(ob, 10).status != PROVED            # as it stands: cvc5 cannot read the lambdas
    theorems = []
    outcome = Through(Cvc5Checker(), theorems).check(ob, 10)
    assert outcome.status == PROVED and outcome.backend == "cvc5"
    (theorem,) = theorems
    assert theorem.conclusion.eq(z3.Not(ob.formula)) and not theorem.hypotheses
    assert Known(theorems).check(ob, 1).status == PROVED


def test_an_obligation_about_what_a_sum_means_is_asked_as_it_stands() -> None:
    """Two Sums whose bodies are equal as functions (j + w, w + j) are two atoms that may differ: the atoms'
    query has a model, and z3 proves the obligation itself."""
    ob = Obligation("bodies alike", "equivalence", sum_over(0, 32, J, X(J + W)) != sum_over(0, 32, J, X(W + J)))
    theorems = []
    assert Through(Z3Checker(), theorems).check(ob, 30).status == PROVED
    (theorem,) = theorems
    assert theorem.conclusion.eq(z3.Not(ob.formula))
    assert theorem.rule == "by_smt"                                 # not through atoms


def test_known_reads_a_statement_up_to_the_order_and_nesting_of_sums() -> None:
    """z3 nests one n-ary sum differently in two processes ((a + b) + c + d against (c + b) + a + d: the memory
    safety goal of vector_add_grid_stride, whose certificate lark check refused); `Known` finds the theorem
    either way, and not for a formula that differs."""
    a, b, c, d = (z3.BitVec(n, 32) for n in "abcd")
    proved = z3.Not(z3.ULE(z3.BitVecVal(10, 32), z3.BitVecVal(3, 32)))
    theorems = []
    Through(Z3Checker(), theorems).check(Obligation("t", "memory_safety", z3.Not(proved)), 10)
    assert Known(theorems).check(Obligation("t", "memory_safety", z3.Not(proved)), 1).status == PROVED
    first, second = (a + b) + c + d, (c + b) + a + d
    assert z3.is_app_of(first.arg(0), z3.Z3_OP_BADD) and not z3.eq(first, second)
    digests = Known([]).digests
    assert digests.digest(first == 0) == digests.digest(second == 0)
    assert digests.digest(first == 0) != digests.digest((a + b) + c + a == 0)
    assert digests.digest(a - b == 0) != digests.digest(b - a == 0)
