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


def _writer_of(index_of, tid: z3.BitVecRef, row: z3.BitVecRef):
    from orchestrator.provers.inverse import propose
    hint = propose("k", index_of(row, tid), [row, tid], E)
    return hint[str(row)], hint[str(tid)]


def _writes(index_of, tid, row, hint, e: int) -> bool:
    value = z3.simplify(z3.substitute(index_of(row, tid), (row, hint[0]), (tid, hint[1])))
    return z3.simplify(z3.substitute(value, (E, z3.BitVecVal(e, 64)))).as_long() == e


def test_an_unrolled_triton_column_is_decoded_from_the_row_of_e():
    # Triton's k-th unrolled store of a row: row·1000 + (tid & 127) + 128·k; every k divides e by 1000 alike
    tid, row = z3.BitVec("tid.x", 32), z3.BitVec("ctaid.x", 32)

    def index(r, t):
        return z3.SignExt(32, r * 1000) + z3.ZeroExt(32, t & 127) + 384

    q, t = _writer_of(index, tid, row)
    assert _solve(q != z3.Extract(31, 0, z3.UDiv(E, 1000)))[0] == z3.unsat   # the row of e, whatever k is
    assert _writes(index, tid, row, (q, t), 7 * 1000 + 384 + 5)


def test_an_offset_that_carries_into_the_row_is_taken_off_first():
    # a stencil's x[256·b + t + 1]: the writer of e = 256·b is thread 255 of block b - 1
    tid, row = z3.BitVec("tid.x", 32), z3.BitVec("ctaid.x", 32)

    def index(r, t):
        return z3.ZeroExt(32, r * 256 + t + 1)

    hint = _writer_of(index, tid, row)
    assert _writes(index, tid, row, hint, 3 * 256)
