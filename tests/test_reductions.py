"""The reduction matcher: comprehensions are identified only after a proved reindexing."""

import z3

from lean_pool.checker import Z3Checker
from orchestrator.provers.reindex import propose
from semantics.comprehension import MAX_FROM, SUM, max_over, sum_over
from semantics.properties.reductions import Matcher

INDEX = z3.BitVecSort(64)
A = z3.Function("A", INDEX, z3.RealSort())
V = z3.Function("v", INDEX, z3.RealSort())
ROW = z3.BitVec("row", 64)
HYP = z3.ULT(ROW, 2048)


def matcher(log=None) -> Matcher:
    def record(ob, outcome):
        if log is not None:
            log.append((ob, outcome))

    return Matcher(HYP, propose, Z3Checker(), 30.0, record, {}, "t")


def unrolled_dot(iterations: int) -> z3.ArithRef:
    j = z3.BitVec("j", 64)
    lanes = sum(A(ROW * 1024 + 4 * j + i) * V(4 * j + i) for i in range(4))
    return sum_over(0, iterations, j, lanes)


def dot(n: int) -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return sum_over(0, n, m, A(ROW * 1024 + m) * V(m))


def test_unrolled_sum_matches_reference_by_bijection():
    log = []
    kernel, reference = matcher(log).rewrite(unrolled_dot(256), dot(1024))
    assert z3.eq(kernel, reference) and str(kernel).startswith("reduction!")
    names = [ob.name for ob, _ in log]
    surjective = any(w in n for n in names for w in ("every element of the reference", "residue class", "image is"))
    assert surjective and any("as many terms" in n for n in names)


def test_dropped_iteration_is_not_matched():
    kernel, reference = matcher().rewrite(unrolled_dot(255), dot(1024))
    assert kernel.decl() == SUM and reference.decl() == SUM


def test_wrong_stride_is_not_matched():
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    kernel = sum_over(0, 1024, j, A(ROW * 1024 + j) * V(j))
    shifted = sum_over(0, 1024, m, A(ROW * 1024 + m) * V(m + 1))
    k2, r2 = matcher().rewrite(kernel, shifted)
    assert k2.decl() == SUM


def test_max_with_initial_element_matches_set_of_elements():
    # kernel: m = x[t]; for c in 1..n: m = max(m, x[c])   reference: max(x[0], x[1..n))
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    base = ROW * 1000
    kernel = max_over(A(base), 0, 999, j, A(base + 1 + j))
    reference = max_over(A(base), 1, 1000, m, A(base + m))
    k2, r2 = matcher().rewrite(kernel, reference)
    assert z3.eq(k2, r2)


def test_max_missing_an_element_is_not_matched():
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    base = ROW * 1000
    kernel = max_over(A(base), 0, 998, j, A(base + 1 + j))      # never looks at the last element
    reference = max_over(A(base), 1, 1000, m, A(base + m))
    k2, _ = matcher().rewrite(kernel, reference)
    assert k2.decl() == MAX_FROM


def test_progression_tiling_arithmetic():
    from semantics.properties.reductions import _tiles

    # {0, 4, 8, ...} ∪ {1, 5, ...} ∪ {2, ...} ∪ {3, ...} over [0, 16): an exact tiling
    assert _tiles([(i, 4, 4) for i in range(4)], (0, 16), exact=True) is True
    # a missing residue class leaves holes
    assert _tiles([(i, 4, 4) for i in range(3)], (0, 16), exact=False) is False
    # one progression too short: element 15 is not covered
    assert _tiles([(0, 4, 4), (1, 4, 4), (2, 4, 4), (3, 4, 3)], (0, 16), exact=False) is False
    # overlap is fine for max (a set), not for sums (a multiset)
    overlapping = [(0, 1, 10), (5, 1, 11)]
    assert _tiles(overlapping, (0, 16), exact=False) is True
    assert _tiles(overlapping, (0, 16), exact=True) is False
    # mixed strides: a singleton, a one-element family and four stride-4 lanes of an unrolled loop
    mixed = [(0, 1, 1), (1, 1, 1), *[(2 + i, 4, 2) for i in range(4)]]
    assert _tiles(mixed, (0, 10), exact=True) is True
    assert _tiles(mixed, (0, 11), exact=False) is False
