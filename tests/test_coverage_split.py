"""Coverage names e / N and e mod N as a quotient and remainder: the formula stays equisatisfiable."""

import z3

from semantics.properties.coverage import E, _split_divisions


def _solve(formula: z3.BoolRef):
    solver = z3.Solver()
    solver.add(formula)
    return solver.check(), solver.model() if solver.check() == z3.sat else None


def test_quotient_and_remainder_keep_their_meaning():
    claim = z3.And(z3.UDiv(E, 393216) == 2, z3.URem(E, 393216) == 5)
    status, model = _solve(_split_divisions(claim))
    assert status == z3.sat and model.eval(E).as_long() == 2 * 393216 + 5
    assert _solve(_split_divisions(z3.And(claim, E != 2 * 393216 + 5)))[0] == z3.unsat


def test_a_remainder_is_below_its_divisor_whatever_the_dividend():
    assert _solve(_split_divisions(z3.UGE(z3.URem(E, 1000), 1000)))[0] == z3.unsat
    shifted = z3.And(z3.URem(E - 256, 1000) == 7, z3.UDiv(E - 256, 1000) == 3, z3.URem(E, 1000) == 263)
    status, model = _solve(_split_divisions(shifted))
    assert status == z3.sat and model.eval(E).as_long() == 3263


def test_a_division_of_a_bound_variable_is_left_alone():
    j = z3.BitVec("j", 64)
    quantified = z3.ForAll([j], z3.Implies(z3.ULT(j, E), z3.URem(j, 1000) != 999))
    assert z3.eq(_split_divisions(quantified), quantified)
