"""An fma chain's nested sum is one unrolled reduction (`semantics.properties.unions.unrolled`): its summands
are the whole tree's, and naming the reduction by a symbol leaves exactly the summands that are not its
members (the replaced kernel equals the original once the symbol is their sum)."""

from __future__ import annotations

import z3

from semantics.properties.unions import MIN_UNROLLED, summands, unrolled


def _chain(n: int) -> tuple[z3.ArithRef, list[z3.ArithRef]]:
    x, w = z3.Function("x", z3.BitVecSort(64), z3.RealSort()), z3.Function("w", z3.BitVecSort(64), z3.RealSort())
    terms = [x(z3.BitVecVal(k, 64)) * w(z3.BitVecVal(k, 64)) for k in range(n)]
    acc = z3.RealVal(0) + terms[0]
    for t in terms[1:]:
        acc = t + acc          # nvcc's fma chain: each tap added to the running sum
    return acc, terms


def test_summands_of_a_nested_sum_are_its_leaves():
    acc, terms = _chain(5)
    leaves = summands(acc)
    assert len(leaves) == 6 and {t.get_id() for t in terms} <= {t.get_id() for t in leaves}


def test_an_fma_chain_of_nine_taps_is_one_unrolled_reduction():
    acc, terms = _chain(9)
    (union,) = unrolled(acc)
    assert len(union.parts) == 10                    # the nine taps and the chain's 0.0 start
    symbol = z3.Real("s")
    replaced = union.replaced(acc, symbol)
    solver = z3.Solver()
    solver.add(symbol == z3.Sum(*union.parts), replaced != acc)
    assert solver.check() == z3.unsat


def test_a_short_chain_is_the_kernel_own_arithmetic():
    acc, _ = _chain(MIN_UNROLLED - 2)
    assert unrolled(acc) == []
