"""The writer-inverse prover: which thread and iteration a store index names, decoded in mixed radix."""

import pytest
import z3

from orchestrator.provers.inverse import propose, split
from semantics.ptx.machine import simplify
from semantics.terms import subterms

BX, TX = z3.BitVec("ctaid.x", 32), z3.BitVec("tid.x", 32)
J = z3.BitVec("j", 64)
E = z3.BitVec("e", 64)
COLS = 32767


def row_base() -> z3.BitVecRef:
    return z3.SignExt(32, COLS * TX + 32 * COLS * BX)


def _decodes(index: z3.BitVecRef, variables, samples) -> None:
    """The hint, evaluated at the index of each sample, gives the sample back."""
    hint = propose("t", index, variables, E)
    assert hint is not None
    for values in samples:
        fixes = [(v, z3.BitVecVal(n, v.size())) for v, n in zip(variables, values, strict=True)]
        element = z3.simplify(z3.substitute(index, *fixes))
        for v, n in zip(variables, values, strict=True):
            assert z3.simplify(z3.substitute(hint[str(v)], (E, element))).as_long() == n, (str(v), values)


def _dividends(hint: dict) -> set[str]:
    return {str(t.arg(0)) for term in hint.values() for t in subterms(term)
            if z3.is_app(t) and t.decl().kind() in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUREM, z3.Z3_OP_BUDIV_I,
                                                    z3.Z3_OP_BUREM_I) and t.arg(1).as_long() in (COLS, 32 * COLS)}


@pytest.mark.parametrize("lane", range(4))
def test_unrolled_lanes_of_a_ragged_row_decode(lane):
    """y[r·32767 + 4j + lane]: the lane's offset is below every coefficient; the floors absorb it."""
    index = row_base() + 4 * J + lane
    _decodes(index, [BX, TX, J], [(0, 0, 0), (3, 31, 8190), (1, 7, 1234)])


def test_unrolled_lanes_share_their_divisions():
    hints = [propose("t", row_base() + 4 * J + lane, [BX, TX, J], E) for lane in range(4)]
    shared = _dividends(hints[0])
    assert "e" in shared and all(_dividends(h) == shared for h in hints)


def test_a_remainder_store_decodes_past_its_offset():
    """The remainder loop's y[r·32767 + 32764 + k]: the offset is not below the coefficient of k, so it is
    subtracted first."""
    k = z3.BitVec("k", 64)
    _decodes(row_base() + 32764 + k, [BX, TX, k], [(0, 0, 0), (3, 31, 2), (2, 5, 1)])


def test_an_offset_that_carries_is_subtracted_first():
    """y[256·b + t + 1] for t < 256: decoding e / 256 before subtracting 1 would be off by one at t = 255."""
    b, t = z3.BitVec("b", 64), z3.BitVec("t", 64)
    _decodes(256 * b + t + 1, [b, t], [(0, 255), (7, 255), (3, 0)])


def _permute_index() -> z3.BitVecRef:
    """nvcc's (b, n, h, d) -> (b, h, n, d) store index: digits of the linear id by division, `x % c` as
    `x - c·(x / c)` (examples/lib_permute_heads)."""
    n_, h_, d_ = 1024, 12, 64
    linear = TX + 256 * BX
    b = linear / (n_ * h_ * d_)
    rest = linear - (n_ * h_ * d_) * b
    n = rest / (h_ * d_)
    rest = rest - (h_ * d_) * n
    h = rest / d_
    d = rest - d_ * h
    return z3.SignExt(32, ((b * h_ + h) * n_ + n) * d_ + d)


def test_a_four_d_permute_decodes_through_the_digits_of_the_linear_id():
    _decodes(_permute_index(), [BX, TX], [(0, 0), (1416, 96), (24575, 255), (3, 17)])


def test_digits_that_do_not_tile_the_linear_id_propose_nothing():
    """A quotient of something other than the linear id's remainders (here by 7: no place value of the
    mixed radix) is no digit; the prover proposes nothing rather than a guess."""
    linear = TX + 256 * BX
    q = linear / 7
    assert propose("t", z3.SignExt(32, q * 64 + (linear - 7 * q) / 3), [BX, TX], E) is None


def test_a_cooperative_groups_warp_rank_decodes():
    """row = 8·ctaid.x + meta_group_rank(), the rank being (tid.x + 256·tid.y + 256·tid.z) >> 5 of the block's
    thread rank: lane 0 of each warp writes (examples/lib_cg_row_sum)."""
    ty, tz = z3.BitVec("tid.y", 32), z3.BitVec("tid.z", 32)
    index = z3.SignExt(32, 8 * BX + z3.LShR(TX + 256 * ty + 256 * tz, 5))
    _decodes(index, [BX, TX, ty, tz], [(0, 0, 0, 0), (1023, 224, 0, 0), (5, 96, 0, 0)])


def _rms_index(channel: int) -> z3.BitVecRef:
    """nvcc's y[(p / HW)·C·HW + p % HW + c·HW] for p = 256·bx + tx, HW = 2^18, C = 64: a signed division by a
    power of two rounds toward zero by adding p's sign bits first, and p % HW is p - (p / HW)·HW."""
    p = TX + 256 * BX
    rounded = p + z3.Concat(z3.BitVecVal(0, 14), z3.Extract(31, 14, p >> 31))
    high = z3.Concat(z3.Extract(31, 18, rounded), z3.BitVecVal(0, 18))
    row = z3.Extract(61, 0, z3.SignExt(32, rounded >> 18))
    return simplify(z3.Concat(z3.BitVecVal(0, 2), z3.Extract(61, 0, z3.SignExt(32, p - high)) + 2 ** 24 * row)
                    + channel * 2 ** 18)


@pytest.mark.parametrize("channel", [0, 5, 63])
def test_a_signed_division_by_a_power_of_two_decodes(channel):
    _decodes(_rms_index(channel), [BX, TX], [(0, 0), (1023, 255), (2048, 17), (458751, 255)])


def test_an_index_with_a_selection_is_read_without_crashing():
    """A selection's condition is a Bool, not a bit-vector: the shift reader skips it (it once asked its size)."""
    from orchestrator.provers.inverse import _shifts_as_divisions
    t = z3.BitVec("t", 32)
    index = z3.If(z3.ULT(t, 8), t, z3.LShR(t, 3))
    rewritten = _shifts_as_divisions(index)
    assert not z3.eq(rewritten, index)          # the shift became a division
    assert z3.is_app_of(rewritten, z3.Z3_OP_ITE)


K = z3.BitVec("k", 64)


def _unrolled_channel_store(lane: int) -> z3.BitVecRef:
    """The lane-th of nvcc's 16 unrolled stores of KernelBench 36's channel loop: y[... + (16·k + lane)·HW]."""
    return simplify(_rms_index(0) + (16 * K + lane) * 2 ** 18)


@pytest.mark.parametrize("lane", [0, 1, 9, 15])
def test_an_unrolled_channel_store_decodes(lane):
    _decodes(_unrolled_channel_store(lane), [BX, TX, K], [(0, 0, 0), (1023, 255, 3), (458751, 17, 2)])


def test_unrolled_channel_stores_propose_one_writer():
    """The lane offset j·HW lies between the low digit (p mod HW) and the digits above it: every store decodes
    the same divisions of e, so the coverage obligation holds one writer, not sixteen (it timed out with them)."""
    hints = [propose("t", _unrolled_channel_store(lane), [BX, TX, K], E) for lane in range(16)]
    assert all(h is not None for h in hints)
    assert all(z3.eq(h[name], hints[0][name]) for h in hints for name in hints[0])


def test_an_offset_that_is_no_multiple_of_the_low_span_is_still_subtracted():
    """A lane offset inside the low digit's span (here HW / 2) cannot be absorbed: the hint subtracts it."""
    _decodes(simplify(_rms_index(0) + 16 * 2 ** 18 * K + 2 ** 17), [BX, TX, K], [(0, 0, 0), (511, 255, 3)])


def test_a_split_takes_a_runtime_product_as_one_term():
    """(b·x·C + c)·HW + hw with b·x no affine term (a product of two values): it is one opaque term of the
    quotient, and the split is exact."""
    b, x, c, hw = (z3.BitVec(n, 64) for n in ("b", "x", "c", "hw"))
    dividend = (b * x * 64 + c) * 2 ** 18 + hw
    parts = split("t", dividend, 2 ** 18)
    assert parts is not None
    quotient, remainder = parts
    assert z3.eq(simplify(remainder), simplify(hw))
    solver = z3.Solver()
    solver.add(z3.Or(quotient != c + 64 * b * x, dividend != quotient * 2 ** 18 + remainder))
    assert solver.check() == z3.unsat


def test_a_split_of_nothing_affine_proposes_nothing():
    b, x = z3.BitVec("b", 64), z3.BitVec("x", 64)
    assert split("t", b * x, 2 ** 18) is None


RAGGED = 65535     # KernelBench 38's row: 255 full strides of 256 threads and one short by a thread


def _first_column(t: z3.BitVecRef) -> z3.BitVecRef:
    """nvcc's start of the unrolled-by-4 loop of `for (c = t; c < 65535; c += 256)`: t after a prologue of
    n_t mod 4 iterations (n_t = 256 for t < 255, 255 for t = 255), as an If over bits of t (its shape in
    the PTX)."""
    prologue = z3.If(z3.Extract(9, 8, RAGGED + ~t) == 3, z3.BitVecVal(0, 32),
                     z3.ZeroExt(30, z3.Extract(9, 8, RAGGED + ~t) + 1))
    return z3.SignExt(32, z3.If(prologue == 0, t, t + 256 * prologue))


@pytest.mark.parametrize("lane", range(4))
def test_an_unrolled_loop_after_a_prologue_decodes(lane):
    """y[r·65535 + first(t) + 1024·k + 256·lane]: first(t) = t + 256·P(t) is no affine term; its branches share
    t, so it reads as t + 256·If(...): t from the column modulo 256, then P(t), then k."""
    index = simplify(65535 * z3.ZeroExt(32, BX) + _first_column(TX) + 1024 * K + 256 * lane)
    _decodes(index, [BX, TX, K], [(0, 0, 0), (5, 17, 62), (32767, 255, 62), (9, 254, 63)])


def test_a_split_through_the_prologue_start_is_exact():
    """The row split of the same offset: quotient the row, the If part of the remainder (the checker proves
    the split under the launch's ranges; here z3 checks it for every block, thread and k in range)."""
    dividend = simplify(65535 * z3.ZeroExt(32, BX) + _first_column(TX) + 1024 * K)
    quotient, remainder = split("t", dividend, RAGGED)
    assert z3.eq(simplify(quotient), simplify(z3.ZeroExt(32, BX)))
    solver = z3.Solver()
    solver.add(z3.ULT(BX, 32768), z3.ULT(TX, 256), z3.ULT(K, 64), dividend != quotient * RAGGED + remainder)
    assert solver.check() == z3.unsat
