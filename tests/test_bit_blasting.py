"""`Z3Checker` asks a pure bit-vector query of simplification and bit-blasting first (0.5 s at most) and takes
only its `unsat`: a 2-D pooling tap test over mixed-radix digits, which z3's default strategy does not decide
in 30 s (it solves the digits' definition for a digit and puts the sum back into the test), is proved at
once; a satisfiable query still gets its model from the default solver, and a query over reals skips the
pass."""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, REFUTED, Obligation, Z3Checker


def tap_test(right_edge_ok: bool) -> z3.BoolRef:
    """The negation of: nvcc's merged test `(oh + 2 | ow − 1) >> 9 == 0` (32-bit) is the reference's
    `oh + 2 < 512 ∧ ow − 1 < 512` (64-bit), for the digits (ow, oh, plane) of a thread's flat index.
    With `right_edge_ok` false the reference's row test is off by one, and the claim fails at oh = 510."""
    ctaid, tid = z3.BitVecs("ctaid.x tid.x", 32)
    c0, c1, c2 = z3.BitVecs("c0 c1 c2", 64)
    flat = z3.ZeroExt(32, tid) + 256 * z3.ZeroExt(32, ctaid)
    hypothesis = z3.And(z3.ULT(ctaid, 2088968), z3.ULT(tid, 256), z3.ULE(c0, 510), z3.ULE(c1, 510),
                        z3.ULE(c2, 2047), flat == c0 + 511 * c1 + 261121 * c2, z3.ULT(flat, 534775808))
    row, col = z3.Extract(31, 0, c1) + 2, z3.Extract(31, 0, c0) - 1
    merged = (z3.Extract(31, 9, row) | z3.Extract(31, 9, col)) == 0
    bound = 512 if right_edge_ok else 511
    reference = z3.And(z3.ULT(c1 + 2, bound), z3.ULT(c0 - 1, 512))
    return z3.And(hypothesis, merged != reference)


def test_a_merged_tap_test_over_digits_is_proved_by_bit_blasting():
    checker = Z3Checker()
    assert checker._blasted(z3.main_ctx(), tap_test(True), 5.0)
    outcome = checker.check(Obligation("tap test", "test", tap_test(True)), 5.0)
    assert outcome.status == PROVED


def test_a_false_tap_test_is_not_blasted_and_keeps_its_model():
    checker = Z3Checker()
    assert not checker._blasted(z3.main_ctx(), tap_test(False), 5.0)
    c1 = z3.BitVec("c1", 64)
    outcome = checker.check(Obligation("tap test", "test", tap_test(False), {"c1": c1}), 30.0)
    assert outcome.status == REFUTED and outcome.model["c1"] == 509


def test_a_query_over_reals_skips_the_pass():
    x = z3.Real("x")
    assert not Z3Checker()._blasted(z3.main_ctx(), z3.And(x > 1, x < 0), 5.0)
