"""Exclusive and reverse scans (KernelBench 91, 92): the guard of an empty prefix dropped by a kernel equation
(`semantics.properties.prefix_guards`), and the writer of a row walked backwards (`orchestrator.provers.inverse`).
"""

from __future__ import annotations

import pytest
import z3

from lean_pool.checker import Z3Checker
from orchestrator.provers.inverse import propose
from semantics.comprehension import prod_over, sum_over
from semantics.proof import Refused
from semantics.proof.rules import by_smt
from semantics.properties import compose, prefix
from semantics.properties.prefix_guards import GuardRemover, equation, guarded

CHECK = Z3Checker()
T = 20.0
INDEX = z3.BitVecSort(64)
X = z3.Function("x", INDEX, z3.RealSort())
K, ROW, M, J = z3.BitVecs("k row m j", 64)
C = 4 * K                                      # the column of the store at iteration k of a 4-times unrolled loop
HYP = z3.And(z3.ULT(K, 8192), z3.ULT(ROW, 128))


def exclusive(column: z3.BitVecRef, bound: int = 1) -> z3.ArithRef:
    """torch's cat((zeros, cumsum(x[:, :-1]))) at (row, column): If(column < bound, 0, Σ_{m < column} x)."""
    return z3.If(z3.ULT(column, bound), z3.RealVal(0), sum_over(0, column - 1 + 1, M, X(ROW * 32768 + M)))


def running(k: z3.BitVecRef) -> z3.ArithRef:
    """The exclusive scan kernel's store at column 4k: whole groups of 4 so far (nothing at k = 0)."""
    return sum_over(0, k, J, sum(X(ROW * 32768 + 4 * J + i) for i in range(4)))


def test_a_guard_that_holds_only_on_the_empty_prefix_is_dropped_by_a_kernel_equation():
    term = exclusive(C)
    theorem = equation(term, HYP, CHECK, T)
    assert theorem.states(z3.Implies(HYP, guarded(term)[1] == term))
    assert theorem.hypotheses == ()


def test_an_exclusive_cumprod_guard_on_its_empty_product_is_dropped_too():
    """cat((ones, cumprod(x[:, :-1]))): If(c < 1, 1, Π_{m<c} x), the empty Prod being 1."""
    prod = prod_over(0, C - 1 + 1, M, X(ROW * 32768 + M))
    term = z3.If(z3.ULT(C, 1), z3.RealVal(1), prod)
    assert equation(term, HYP, CHECK, T).states(z3.Implies(HYP, prod == term))
    with pytest.raises(Refused):   # 0 is no empty product
        equation(z3.If(z3.ULT(C, 1), z3.RealVal(0), prod), HYP, CHECK, T)


def test_a_guard_that_also_holds_on_a_nonempty_prefix_is_refused():
    """If(c < 8, 0, Σ_{m<c}) is 0 at c = 4, where the prefix has 4 elements: not the prefix."""
    with pytest.raises(Refused):
        equation(exclusive(C, bound=8), HYP, CHECK, T)


def test_only_the_neutral_element_beside_a_comprehension_is_a_guarded_prefix():
    s = sum_over(0, C, M, X(M))
    assert guarded(z3.If(C == 0, z3.RealVal(0), s)) is not None
    assert guarded(z3.If(C != 0, s, z3.RealVal(0))) is not None     # the other way round
    assert guarded(z3.If(C == 0, z3.RealVal(1), s)) is None          # 1 is no empty Sum
    assert guarded(z3.If(C == 0, z3.RealVal(1), prod_over(0, C, M, X(M)))) is not None   # it is an empty Prod
    assert guarded(z3.If(C == 0, X(K), s)) is None
    assert guarded(z3.If(C == 0, z3.RealVal(0), sum_over(0, 4096, M, X(M)))) is None   # a triu matmul's row


def _lane(kernel: z3.ArithRef, reference: z3.ArithRef) -> tuple[bool, bool]:
    """(the rewritten comparison proved, the goal's theorem recovered from it by `compose.close`) for a lane
    rewritten by the guard remover and then the prefix splitter."""
    chain = prefix.Chain(GuardRemover(HYP, CHECK, T, lambda *_: None),
                         prefix.splitter(HYP, "t", CHECK, T, lambda *_: None))
    k2, r2 = chain.rewrite(kernel, reference)
    claim = compose.comparison(HYP, k2, r2)
    solver = z3.Solver()
    solver.set("timeout", int(T * 1000))
    solver.add(z3.Not(claim))
    if solver.check() != z3.unsat:
        return False, False
    theorem = by_smt(claim, CHECK, T, "test", "test")
    closed = compose.close(theorem, HYP, chain.steps)
    return True, closed is not None and closed.states(compose.comparison(HYP, kernel, reference))


def test_the_exclusive_scan_closes_to_its_goal_at_the_empty_column():
    assert _lane(running(K), exclusive(C)) == (True, True)


def test_an_exclusive_reference_against_an_inclusive_kernel_stays_unproved():
    """The kernel adds x[4k] before its store: the guard is still dropped, and the difference x[4k] remains."""
    assert _lane(running(K) + X(ROW * 32768 + 4 * K), exclusive(C))[0] is False


def test_without_the_guard_remover_the_empty_column_is_not_proved():
    """The old failure: the splitter's fresh symbol is compared with the guarded 0."""
    chain = prefix.Chain(prefix.splitter(HYP, "t", CHECK, T, lambda *_: None))
    k2, r2 = chain.rewrite(running(K), exclusive(C))
    solver = z3.Solver()
    solver.add(z3.Not(compose.comparison(HYP, k2, r2)))
    assert solver.check() == z3.sat


BX, TX = z3.BitVec("ctaid.x", 32), z3.BitVec("tid.x", 32)
E = z3.BitVec("e", 64)
ROW_ID = z3.SignExt(32, TX + 32 * BX)


def backwards(lane: int) -> z3.BitVecRef:
    """Element of the store of lane `lane` at iteration k of `for (c = cols - 1; c >= 0; --c)` unrolled 4 times
    (cols = 32768): 32768·row + 32767 - lane - 4k, as nvcc's byte offset reads it."""
    return z3.LShR(131068 - 4 * lane + 18446744073709551600 * K + z3.Concat(z3.Extract(61, 0, 32768 * ROW_ID),
                                                                             z3.BitVecVal(0, 2)), 2)


@pytest.mark.parametrize("lane", range(4))
def test_a_row_walked_backwards_decodes_its_writer(lane):
    variables = [BX, TX, K]
    hint = propose("t", backwards(lane), variables, E)
    assert hint is not None
    for bx, tx, k in [(0, 0, 0), (3, 17, 8191), (1023, 31, 4000)]:
        fixes = [(BX, z3.BitVecVal(bx, 32)), (TX, z3.BitVecVal(tx, 32)), (K, z3.BitVecVal(k, 64))]
        element = z3.simplify(z3.substitute(backwards(lane), *fixes))
        assert element.as_long() == 32768 * (tx + 32 * bx) + 32767 - lane - 4 * k
        got = [z3.simplify(z3.substitute(hint[str(v)], (E, element))).as_long() for v in variables]
        assert got == [bx, tx, k]


def test_the_backward_writers_cover_every_element_of_a_row():
    """Every e < 32768·32768 is written by one of the four lanes' proposed writers (the coverage claim, here
    asked of z3 directly)."""
    cases = []
    for lane in range(4):
        hint = propose("t", backwards(lane), [BX, TX, K], E)
        at = [(BX, hint["ctaid.x"]), (TX, hint["tid.x"]), (K, hint["k"])]
        cases.append(z3.And(z3.ULT(hint["ctaid.x"], 1024), z3.ULT(hint["tid.x"], 32), z3.ULE(hint["k"], 8191),
                            z3.substitute(backwards(lane), *at) == E))
    solver = z3.Solver()
    solver.set("timeout", int(T * 1000))
    solver.add(z3.ULT(E, 32768 * 32768), z3.Not(z3.Or(cases)))
    assert solver.check() == z3.unsat


def test_a_falling_counter_above_another_coefficient_proposes_nothing():
    """-64k + tid.x: the counter is not the lowest digit, so the column reading does not apply."""
    index = z3.ZeroExt(32, TX) + 1000 - 64 * K
    assert propose("t", index, [TX, K], E) is None
    assert propose("t", z3.ZeroExt(32, TX) * 32768 - 4 * K - 5 * z3.ZeroExt(32, BX), [BX, TX, K], E) is None


def test_a_falling_thread_coordinate_is_left_to_an_agent():
    """256·b + 255 - t (examples/llm_mirrored_store): the heuristic proposes no writer; only loop counters fall."""
    index = 256 * z3.ZeroExt(32, BX) + 255 - z3.ZeroExt(32, TX)
    assert propose("t", index, [BX, TX], E) is None
