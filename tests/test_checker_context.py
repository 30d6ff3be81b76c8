"""`Z3Checker` solves each obligation in a z3 context of its own (STYLE 9): an answer and its model depend on
the obligation alone, not on what the process built or solved before; models come back into the main
context, where replay evaluates the obligation's own terms; several threads can solve at once."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

import z3

from lean_pool.cancel import CURRENT, CancelToken
from lean_pool.checker import PROVED, REFUTED, UNKNOWN, Obligation, Z3Checker


def underdetermined() -> Obligation:
    """Many models: which one z3 picks is where a shared context would show its history."""
    x, y, r = z3.BitVec("x", 32), z3.BitVec("y", 32), z3.Real("r")
    formula = z3.And(z3.UGT(x * 3 + y, 1000), z3.ULT(x, 5000), y & 7 == 3, r * r > 2, r < 100)
    return Obligation("many models", "test", formula, {"x": x, "y": y, "r": r})


def unrelated_solving() -> None:
    """Work in the main context that a long-lived process would have done before: terms and solver runs."""
    for n in range(40):
        a, b = z3.BitVecs(f"a{n} b{n}", 32)
        solver = z3.Solver()
        solver.add(a * b == 1000 + n, z3.UGT(a, 1), z3.UGT(b, 1), z3.Real(f"s{n}") > n)
        solver.check()
        Z3Checker().check(Obligation("other", "test", z3.And(a + b == n, z3.ULT(a, b)), {"a": a}), 10)


def test_the_same_obligation_gets_the_same_model_before_and_after_unrelated_solving():
    first = Z3Checker().check(underdetermined(), 30)
    unrelated_solving()
    second = Z3Checker().check(underdetermined(), 30)
    assert first.status == second.status == REFUTED
    assert first.model == second.model


def test_the_model_lives_in_the_main_context_and_agrees_with_the_witness_values():
    ob = underdetermined()
    outcome = Z3Checker().check(ob, 30)
    assert outcome.z3_model.ctx == z3.main_ctx()
    assert z3.is_true(outcome.z3_model.eval(ob.formula, model_completion=True))
    assert outcome.z3_model.eval(ob.witness["x"]).as_long() == outcome.model["x"]


def test_threads_solve_at_once_with_the_answers_of_one_thread():
    obligations = [underdetermined() for _ in range(4)]
    x = z3.BitVec("x", 32)
    obligations += [Obligation("unsat", "test", z3.And(z3.UGT(x, 5), z3.ULT(x, 3)))] * 4
    alone = [Z3Checker().check(ob, 30) for ob in obligations]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda ob: Z3Checker().check(ob, 30), obligations))
    assert [o.status for o in together] == [o.status for o in alone] == [REFUTED] * 4 + [PROVED] * 4
    assert [o.model for o in together] == [o.model for o in alone]


def semiprime() -> Obligation:
    """Hard for z3 (a 150-bit semiprime through a bit-blasted multiplier): runs until stopped."""
    p, q = 2**61 - 1, 2**89 - 1
    a, b = z3.BitVec("a", 160), z3.BitVec("b", 160)
    return Obligation("factor", "test", z3.And(a * b == p * q, z3.UGT(a, 1), z3.UGT(b, 1),
                                               z3.ULT(a, 2**62), z3.ULT(b, 2**90)))


def test_a_query_cancelled_before_z3_started_it_stops_and_says_cancelled():
    """z3 forgets an interrupt that comes before its check begins; the checker interrupts until the check
    returns, so a token cancelled before the query (a search's loser, cancelled while it was being
    translated) still stops it instead of letting it run to its work limit (`z3: canceled`) or timeout."""
    token = CancelToken()
    token.cancel()
    with ThreadPoolExecutor(1) as pool:
        outcome = pool.submit(contextvars.copy_context().run, _checked_under, token).result()
    assert outcome.status == UNKNOWN and outcome.reason == "cancelled"


def _checked_under(token: CancelToken):
    CURRENT.set(token)
    return Z3Checker().check(semiprime(), 600)
