"""The slab lemma for races across blocks (`semantics.properties.block_slabs`): a row-per-block store
out[S·b + t + k·bs] (t < bs, the column below S) is proved race free through kernel rules, a store that
reaches into the next block's row is not, and the slab of a site that leaves its row is refused; the kernel
rule `ordered_multiples` (rows in order) and its refusals."""

import pytest
import z3

from lean_pool.checker import Z3Checker
from semantics.proof import Refused
from semantics.proof.indices import ordered_multiples
from semantics.properties import block_slabs, race_search, races
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access

THREAD = Thread.fresh("")
ROW, BLOCK, GRID = 1000, 64, 4096
K = z3.BitVec("k", 64)


def _store(row: int, extra: int = 0) -> Access:
    """y[row·b + t + 64·k] (4-byte floats) while the column t + 64·k + extra stays below ROW."""
    b, t = (z3.ZeroExt(32, v) for v in (THREAD.ctaid[0], THREAD.tid[0]))
    column = t + BLOCK * K
    guard = z3.And(z3.ULT(K, 1 << 20), z3.ULT(column + extra, ROW))
    return Access("store", "global", "y", (row * b + column) * 4, 4, 4, (z3.RealVal(1),), guard, (), 7, None)


def _check(access: Access):
    launch = Launch((GRID, 1, 1), (BLOCK, 1, 1))
    log = []
    result = race_search.check([access], {"y": 4}, THREAD, launch, set(), Z3Checker(), 20.0,
                         lambda ob, out: log.append((ob.name, out.status)))
    return result, log


def test_row_per_block_store_is_race_free_by_slabs(monkeypatch):
    monkeypatch.setattr(race_search, "QUICK_S", 0.5)   # the plain obligation's try: not the subject here
    access = _store(ROW)
    launch = Launch((GRID, 1, 1), (BLOCK, 1, 1))
    slabs = block_slabs.Slabs(THREAD, races.OTHER, launch, Z3Checker(), 20.0, lambda *_: None)
    assert slabs.axis(access, access) == (0, ROW * 4)
    goal = z3.Not(races.obligation(access, access, THREAD, launch, set()).formula)
    result, log = _check(access)
    assert result.state == "proved"
    assert any(t.conclusion.eq(goal) and not t.hypotheses for t in result.theorems)


def test_store_past_its_row_is_not_race_free():
    result, _ = _check(_store(ROW - 8))   # rows of 992 elements written up to column 999: the next row's start
    assert result.state == "violated"
    assert result.findings[0].witness["first"]["block"] != result.findings[0].witness["second"]["block"]


def test_slab_refused_when_the_column_leaves_the_row():
    access = _store(ROW, extra=-8)   # guard column < ROW + 8, stride ROW: a site that leaves its row
    launch = Launch((GRID, 1, 1), (BLOCK, 1, 1))
    slabs = block_slabs.Slabs(THREAD, races.OTHER, launch, Z3Checker(), 20.0, lambda *_: None)
    assert slabs.first(access, 0, ROW * 4) is None


def test_ordered_multiples_states_the_order_of_rows():
    x, y = z3.BitVecs("x y", 15)
    theorem = ordered_multiples(x, y, 262140, 65)
    assert not theorem.hypotheses
    # the statement is true: no counterexample at small widths, where the solver can check it
    small = ordered_multiples(*z3.BitVecs("u v", 4), 1000, 16)
    solver = z3.Solver()
    solver.add(z3.Not(small.conclusion))
    assert solver.check() == z3.unsat
    assert z3.is_implies(theorem.conclusion)


@pytest.mark.parametrize("args", [
    (z3.BitVec("x", 15), z3.BitVec("y", 16), 3, 65),   # widths differ
    (z3.BitVec("x", 15), z3.BitVec("y", 15), 0, 65),   # not positive
    (z3.BitVec("x", 4), z3.BitVec("y", 4), 1 << 12, 16),   # 2^4·2^12 wraps at 16 bits
    (z3.BitVec("x", 8), z3.BitVec("y", 8), 3, 4),      # narrower than the factors
])
def test_ordered_multiples_refuses_what_could_wrap(args):
    with pytest.raises(Refused):
        ordered_multiples(*args)
