"""The prefix split: a running sum of s-element groups plus a partial group against the reference's prefix."""

import random
from fractions import Fraction

import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import SUM, sum_over
from semantics.properties import prefix
from semantics.replay import Evaluator, differ

INDEX = z3.BitVecSort(64)
X = z3.Function("x", INDEX, z3.RealSort())
K = z3.BitVec("k", 64)
ROW = z3.BitVec("row", 64)
HYP = z3.And(z3.ULT(K, 8192), z3.ULT(ROW, 128))


def splitter(log=None) -> prefix.PrefixSplitter:
    def record(ob, outcome):
        if log is not None:
            log.append((ob, outcome))
    return prefix.splitter(HYP, "t", Z3Checker(), 30.0, record)


def running(groups: int, tail: int) -> z3.ArithRef:
    """What the scan kernel stores at iteration k: whole groups of 4 so far, then `tail` elements of group k."""
    j = z3.BitVec("j", 64)
    whole = sum_over(0, K, j, sum(X(ROW * 32768 + groups * j + i) for i in range(groups)))
    return whole + sum(X(ROW * 32768 + groups * K + t) for t in range(tail))


def cumsum(count: z3.BitVecRef) -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return sum_over(0, count, m, X(ROW * 32768 + m))


def _prove_equal(kernel, reference) -> bool:
    solver = z3.Solver()
    solver.add(HYP, kernel != reference)
    return solver.check() == z3.unsat


def test_inclusive_scan_matches_the_prefix():
    log = []
    kernel, reference = splitter(log).rewrite(running(4, 2), cumsum(4 * K + 2))
    assert not any(z3.is_app(t) and t.decl() == SUM for t in (kernel, reference))
    assert _prove_equal(kernel, reference)
    assert any("4·K + 2 elements" in ob.name for ob, _ in log)


def test_exclusive_scan_leaves_a_satisfiable_difference():
    kernel, reference = splitter().rewrite(running(4, 1), cumsum(4 * K + 2))
    assert "prefix!" in str(kernel) and "prefix!" in str(reference)
    assert not _prove_equal(kernel, reference)


def test_wrong_group_is_not_split():
    j = z3.BitVec("j", 64)
    skipped = sum_over(0, K, j, sum(X(ROW * 32768 + 4 * j + i) for i in (0, 1, 2, 2)))
    kernel, reference = splitter().rewrite(skipped, cumsum(4 * K))
    assert kernel.decl() == SUM and reference.decl() == SUM


def test_the_identity_holds_on_numbers():
    """The theorem the rewrite relies on, expanded at small k: Σ_{m<4k+p} x_m = Σ_{j<k} Σ_{i<4} x_{4j+i} + tail."""
    rng = random.Random(1)
    solver = z3.Solver()
    solver.add(K == 5, ROW == 3)
    assert solver.check() == z3.sat
    model = solver.model()
    for p in range(4):
        overrides = {("x", 3 * 32768 + i): Fraction(rng.randint(-50, 50), rng.randint(1, 9)) for i in range(40)}
        ev = Evaluator(model, overrides)
        assert not differ(ev.value(running(4, p)), ev.value(cumsum(4 * K + p)))
        assert differ(ev.value(running(4, p)), ev.value(cumsum(4 * K + p + 1)))
