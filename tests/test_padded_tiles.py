"""The padded-tile rewriter (semantics/properties/padded_tiles.py): zero tails are cut only when proved zero."""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Obligation, Z3Checker
from semantics.comprehension import SUM, sum_over
from semantics.properties.padded_tiles import TileCutter

A = z3.Function("A", z3.BitVecSort(64), z3.RealSort())
K = 10          # reference terms
TILE = 4        # kernel lanes per iteration: 3 tiles = 12 terms, the last 2 padded


def _kernel(pad_at: int) -> z3.ArithRef:
    """Sum over 3 tiles of 4 lanes, lane l at tile j reading A[4j + l], 0 from index `pad_at` on."""
    j = z3.BitVec("j", 64)
    lanes = [z3.If(z3.UGE(TILE * j + lane, pad_at), z3.RealVal(0), A(TILE * j + lane)) for lane in range(TILE)]
    return sum_over(0, 3, j, z3.Sum(lanes))


def _reference() -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return sum_over(0, K, m, A(m))


def _cut(kernel: z3.ArithRef) -> z3.ArithRef:
    log: list = []
    cutter = TileCutter(z3.BoolVal(True), "test", Z3Checker(), 10.0, lambda ob, out: log.append((ob, out)))
    rewritten, _ = cutter.rewrite(kernel, _reference())
    return rewritten


def _sizes(term: z3.ExprRef) -> list[int]:
    parts = term.children() if z3.is_add(term) else [term]
    return sorted(z3.simplify(p.arg(1)).as_long() - z3.simplify(p.arg(0)).as_long() for p in parts if p.decl() == SUM)


def _equal(a: z3.ArithRef, b: z3.ArithRef) -> bool:
    """Equal after expanding every Sum (3 iterations here): a check of the rewrite, independent of it."""
    formula = _expanded(a) != _expanded(b)
    return Z3Checker().check(Obligation("rewrite preserves the value", "test", formula), 10.0).status == PROVED


def _expanded(term: z3.ExprRef) -> z3.ArithRef:
    if z3.is_app(term) and term.decl() == SUM:
        lo, hi = (z3.simplify(b).as_long() for b in term.children()[:2])
        body = term.arg(2).body()
        return z3.Sum([z3.substitute_vars(body, z3.BitVecVal(i, 64)) for i in range(lo, hi)] or [z3.RealVal(0)])
    if z3.is_app(term) and term.num_args():
        return term.decl()(*[_expanded(c) for c in term.children()])
    return term


def test_zero_tail_is_cut_to_the_reference_count():
    kernel = _kernel(K)
    rewritten = _cut(kernel)
    assert sum(_sizes(rewritten)) == K          # 2 lanes of 3 tiles, 2 lanes of 2 tiles
    assert _sizes(rewritten) == [2, 2, 3, 3]
    assert _equal(kernel, rewritten)


def test_a_tail_that_is_not_zero_is_kept_whole_unasked():
    """Nothing padded (12 nonzero terms, the reference has 10): nothing may be dropped, and with no lane
    zero at its last tile the Sum is left as it is, no obligation spent on its selections (a block tree's
    thousand partial sums, each longer than the reference's outer Sum, are such Sums)."""
    kernel = _kernel(12)
    log: list = []
    cutter = TileCutter(z3.BoolVal(True), "test", Z3Checker(), 10.0, lambda ob, out: log.append((ob, out)))
    rewritten, _ = cutter.rewrite(kernel, _reference())
    assert rewritten.eq(kernel)
    assert log == []


def test_equal_counts_are_left_alone():
    j = z3.BitVec("j", 64)
    kernel = sum_over(0, 5, j, A(2 * j) + A(2 * j + 1))
    assert z3.eq(_cut(kernel), kernel)

