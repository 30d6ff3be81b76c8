"""The prefix peel: an unrolled main loop's running sum (product), then the remainder loop's, against one prefix."""

import random
from fractions import Fraction

import pytest
import z3

from lean_pool.checker import PROVED, Z3Checker
from semantics.comprehension import PROD, SUM, prod_over, sum_over
from semantics.properties import prefix
from semantics.replay import Evaluator, differ
from semantics.terms import subterms

INDEX = z3.BitVecSort(64)
X = z3.Function("x", INDEX, z3.RealSort())
MAIN = z3.BitVec("main", 64)    # whole groups of 4 the main loop ran
K = z3.BitVec("k", 64)          # the remainder loop's iteration
ROW = z3.BitVec("row", 64)
COLS = 32767
HYP = z3.And(z3.ULT(MAIN, 8192), z3.ULT(K, 3), z3.ULT(ROW, 128))
SUM_OP = (sum_over, lambda ts: sum(ts), SUM)
PROD_OP = (prod_over, lambda ts: z3.Product(ts), PROD)


def splitter(log=None) -> prefix.PrefixSplitter:
    def record(ob, outcome):
        if log is not None:
            log.append((ob, outcome))
    return prefix.splitter(HYP, "t", Z3Checker(), 30.0, record)


def x(column: z3.BitVecRef) -> z3.ArithRef:
    return X(ROW * COLS + column)


def ragged(op, start: int = 0, current: bool = True, main_first: bool = True) -> z3.ArithRef:
    """What the remainder loop stores at its iteration K: the main loop's groups, the remainder's elements
    so far (from column 4·MAIN + start), and the current element when `current`."""
    over, combine, _ = op
    j, i = z3.BitVec("j", 64), z3.BitVec("i", 64)
    main = over(0, MAIN, j, combine([x(4 * j + t) for t in range(4)]))
    remainder = over(0, K, i, x(4 * MAIN + start + i))
    running = [main, remainder] if main_first else [remainder, main]
    return combine([*running, x(4 * MAIN + K)] if current else running)


def prefix_of(op, count: z3.BitVecRef) -> z3.ArithRef:
    over, _, _ = op
    m = z3.BitVec("m", 64)
    return over(0, count, m, x(m))


def _valid(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.set("timeout", 20000)
    solver.add(HYP, z3.Not(claim))
    return solver.check() == z3.unsat


def _comprehensions(*terms: z3.ExprRef) -> bool:
    return any(z3.is_app(s) and s.decl() in (SUM, PROD) for t in terms for s in subterms(t))


@pytest.mark.parametrize("op", [SUM_OP, PROD_OP], ids=["sum", "product"])
@pytest.mark.parametrize("main_first", [True, False], ids=["main_first", "remainder_first"])
def test_remainder_store_matches_the_prefix(op, main_first):
    log = []
    kernel, reference = splitter(log).rewrite(ragged(op, main_first=main_first), prefix_of(op, 4 * MAIN + K + 1))
    assert not _comprehensions(kernel, reference)
    assert _valid(kernel == reference)
    assert any("at least 4·K elements" in ob.name for ob, _ in log)
    assert any("1-element groups" in ob.name and "1·K + 1 elements" in ob.name for ob, _ in log)


@pytest.mark.parametrize("op", [SUM_OP, PROD_OP], ids=["sum", "product"])
def test_exclusive_remainder_store_leaves_a_difference(op):
    kernel, reference = splitter().rewrite(ragged(op, current=False), prefix_of(op, 4 * MAIN + K + 1))
    assert not _comprehensions(kernel, reference)     # both peeled and split: only the element is left over
    assert not _valid(kernel == reference)


@pytest.mark.parametrize("op", [SUM_OP, PROD_OP], ids=["sum", "product"])
def test_a_remainder_that_skips_a_column_is_not_split(op):
    """The remainder loop's elements start one column late: the main loop's sum is peeled, the remainder's
    groups are not the rest of the prefix, so its comprehension and the rest stay apart."""
    log = []
    kernel, reference = splitter(log).rewrite(ragged(op, start=1), prefix_of(op, 4 * MAIN + K + 1))
    assert _comprehensions(kernel) and _comprehensions(reference)
    assert any("1-element groups" in ob.name and "consecutive" in ob.name and outcome.status != PROVED
               for ob, outcome in log)
    assert not _valid(kernel == reference)


def test_a_lone_running_sum_is_not_peeled():
    """With no other running sum beside it the main loop's sum is not peeled: a prefix whose end moves with
    another variable is not its groups plus a few elements."""
    j = z3.BitVec("j", 64)
    main = sum_over(0, MAIN, j, sum(x(4 * j + t) for t in range(4)))
    kernel, reference = splitter().rewrite(main + x(4 * MAIN + K), prefix_of(SUM_OP, 4 * MAIN + K + 1))
    assert kernel.decl() != SUM and _comprehensions(kernel) and reference.decl() == SUM


def test_a_peel_past_the_end_is_rejected():
    """The main loop's groups run past the prefix (the reference ends before 4·MAIN): no peel."""
    log = []
    kernel, reference = splitter(log).rewrite(ragged(SUM_OP), prefix_of(SUM_OP, 4 * MAIN - 1 + K))
    assert any("at least 4·K elements" in ob.name and outcome.status != PROVED for ob, outcome in log)
    assert reference.decl() == SUM and _comprehensions(kernel)


@pytest.mark.parametrize("op", [SUM_OP, PROD_OP], ids=["sum", "product"])
def test_the_peel_identity_holds_on_numbers(op):
    """The theorem, expanded at MAIN = 5: the prefix of 4·5 + k + 1 elements is the main loop's groups, then
    the remainder's elements, then the current one; one element more or less differs."""
    rng = random.Random(2)
    for k in range(3):
        solver = z3.Solver()
        solver.add(MAIN == 5, K == k, ROW == 3)
        assert solver.check() == z3.sat
        overrides = {("x", 3 * COLS + i): Fraction(rng.choice([-1, 1]) * rng.randint(2, 9), rng.randint(1, 9))
                     for i in range(40)}
        ev = Evaluator(solver.model(), overrides)
        stored = ev.value(ragged(op))
        assert not differ(stored, ev.value(prefix_of(op, 4 * MAIN + K + 1)))
        assert differ(stored, ev.value(prefix_of(op, 4 * MAIN + K + 2)))
        assert differ(stored, ev.value(prefix_of(op, 4 * MAIN + K)))
