"""nvcc's magic-number division read back as a division (`semantics.ptx.magic`): the theorem exhaustively at 8
bits, and each rewrite proved equal to the term it replaces by the solver (at 12 bits, where a divider is
small) — the simplifier is untrusted until the solver agrees (STYLE 3)."""

from __future__ import annotations

import pytest
import z3

from semantics import purify
from semantics.ptx import magic

W = 12


def _proves(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return solver.check() == z3.unsat


def _mul_hi(x: z3.BitVecRef, m: int) -> z3.BitVecRef:
    """What the executor builds for `mul.hi.u x, m` (`instructions._int_multiply`)."""
    w = x.size()
    return z3.Extract(2 * w - 1, w, z3.ZeroExt(w, x) * z3.ZeroExt(w, z3.BitVecVal(m, w)))


def _shr(t: z3.BitVecRef, c: int) -> z3.BitVecRef:
    return z3.LShR(t, z3.BitVecVal(c, t.size()))


def _magic(d: int, w: int) -> tuple[int, int]:
    """nvcc's (M, s) for an unsigned division by d: M = ⌈2^(w+s)/d⌉ with the least s that is exact for every
    w-bit x, else s = ⌈log2 d⌉ with M of w + 1 bits (the add form)."""
    for s in range((d - 1).bit_length()):
        m = -(-(1 << (w + s)) // d)
        if m < 1 << w and m * d - (1 << (w + s)) <= 1 << s:
            return m, s
    s = (d - 1).bit_length()
    return -(-(1 << (w + s)) // d), s


def test_theorem_holds_exhaustively_at_8_bits():
    """Every (M, n, bound) that `divisor` accepts gives ⌊x·M/2^n⌋ = ⌊x/d⌋ for every x up to the bound."""
    accepted = 0
    for m in range(1, 1 << 9):
        for n in range(8, 18):
            for bound in (255, 127, 31):
                d = magic.divisor(m, n, bound)
                if d is None:
                    continue
                accepted += 1
                assert all((x * m) >> n == x // d for x in range(bound + 1)), (m, n, bound, d)
    assert accepted > 1000


def test_divisor_refuses_a_reciprocal_too_coarse_for_the_range():
    # M = 0x33 ≈ 2^8/5 rounded down: ⌊255·51/256⌋ = 50 but 255 / 5 = 51
    assert magic.divisor(51, 8, 255) is None


@pytest.mark.parametrize("d", [3, 5, 6, 7, 10, 100, 255, 510, 641, 1000])
def test_mul_hi_and_shift_rewrites_to_the_division(d):
    x = z3.BitVec("x", W)
    m, s = _magic(d, W)
    if m >= 1 << W:
        t = _mul_hi(x, m - (1 << W))           # the add form: ((x - t) >> 1 + t) >> (s - 1)
        exact = _shr(_shr(x - t, 1) + t, s - 1)
        term = magic.rewrite(_shr(magic.rewrite(_shr(x - t, 1) + t), s - 1))
    else:
        exact = _shr(_mul_hi(x, m), s)
        term = magic.rewrite(_shr(magic.rewrite(_mul_hi(x, m)), s))
    rewritten = term
    assert z3.is_app_of(rewritten, z3.Z3_OP_BUDIV), rewritten
    assert rewritten.arg(1).as_long() == d
    assert _proves(rewritten == exact)


def test_a_bounded_dividend_admits_a_shorter_reciprocal():
    """(y >> 4) is below 2^8: a reciprocal good only there is accepted, and is right there."""
    y = z3.BitVec("y", W)
    x = _shr(y, 4)
    m = -(-(1 << W) // 7)                    # ⌈2^12/7⌉, e = 6: exact for x·6 < 2^12 only
    exact = _mul_hi(x, m)
    rewritten = magic.rewrite(exact)
    assert z3.is_app_of(rewritten, z3.Z3_OP_BUDIV) and rewritten.arg(1).as_long() == 7 * 16
    assert _proves(rewritten == exact)


def test_an_unbounded_dividend_keeps_a_short_reciprocal_as_it_is():
    x = z3.BitVec("x", W)
    m = -(-(1 << W) // 7)
    exact = _mul_hi(x, m)
    assert magic.rewrite(exact).eq(exact)
    assert not _proves(z3.UDiv(x, 7) == exact)    # and rightly: it is wrong near 2^12


def _signed_division(x: z3.BitVecRef, m: int, c: int) -> z3.BitVecRef:
    """What the executor builds for nvcc's `x / d` on a signed int: mul.hi.s, shr.s by c, shr.u by w − 1, add."""
    w = x.size()
    h = z3.Extract(2 * w - 1, w, z3.SignExt(w, x) * z3.SignExt(w, z3.BitVecVal(m, w)))
    q = magic.rewrite(h >> c) if c else h
    return magic.rewrite(q + magic.rewrite(_shr(h, w - 1)))


def _signed_magic(d: int, w: int) -> tuple[int, int]:
    """nvcc's (M, c) for a signed division by d: the least c with M = ⌈2^(w+c)/d⌉ below 2^(w-1) exact."""
    for c in range(w):
        m = -(-(1 << (w + c)) // d)
        if m < 1 << (w - 1) and (1 << (w - 1)) * (m * d - (1 << (w + c))) <= 1 << (w + c):
            return m, c
    raise AssertionError(d)


def _truncates(term: z3.BitVecRef, x: z3.BitVecRef, d: int) -> z3.BoolRef:
    """term = trunc(x/d) as integers, x and term read as signed (d may exceed the signed range of x)."""
    xi = z3.BV2Int(x, is_signed=True)
    return z3.BV2Int(term, is_signed=True) == z3.If(xi < 0, -((-xi) / d), xi / d)


@pytest.mark.parametrize("d", [3, 5, 6, 9, 10, 100, 641])      # 7: the add form, not read (yet)
def test_signed_division_is_read_as_truncation(d):
    """The rewrite is trunc(x/d) (C's `/` on a signed int) for every 12-bit x, negative ones included."""
    x = z3.BitVec("x", W)
    m, c = _signed_magic(d, W)
    exact = _signed_division(x, m, c)
    assert z3.is_app_of(exact, z3.Z3_OP_ITE), exact
    assert _proves(exact == x / d)          # z3's bvsdiv truncates towards zero, as C does


def test_signed_theorem_holds_exhaustively_at_8_bits():
    """Every (M, c) the rewrite accepts gives trunc(x/d) for every 8-bit signed x; the rest are left alone."""
    accepted = 0
    for m in range(1, 128):
        for c in range(4):
            x = z3.BitVec("x", 8)
            term = _signed_division(x, m, c)
            if not z3.is_app_of(term, z3.Z3_OP_ITE):
                continue
            accepted += 1
            d = term.arg(2).arg(1).as_long()
            assert _proves(_truncates(term, x, d)), (m, c)      # for all 256 values of x
    assert accepted > 20


def test_a_wide_product_shifted_is_a_division():
    """`mul.wide.u32 t, x, M; shr.u64 q, t, 34` (x / 5 of a 32-bit x; here at 8 bits, where the solver's
    divider is small) reads as a division of the zero-extended x."""
    for w, m, s, d in ((8, 205, 10, 5), (8, 171, 9, 3)):
        x = z3.BitVec("x", w)
        exact = _shr(z3.ZeroExt(w, x) * z3.ZeroExt(w, z3.BitVecVal(m, w)), s)
        rewritten = magic.rewrite(exact)
        assert z3.is_app_of(rewritten, z3.Z3_OP_BUDIV) and rewritten.arg(1).as_long() == d, rewritten
        assert _proves(rewritten == exact)
    wraps = z3.ZeroExt(4, z3.BitVec("y", 8)) * 0x100            # y·256 can wrap at 12 bits: left alone
    assert magic.rewrite(_shr(wraps, 9)).eq(_shr(wraps, 9))


def test_a_wide_products_high_word_masked_is_a_multiple_of_the_division():
    """81_conv_transpose2d's row offset: `mul.wide.u32 t, x, M; shr.u64 h, t, 32; cvt.u32.u64; shl 5; and
    -128` is (x / 5)·128 modulo 2^32 (here at 8 bits: (x / 5)·8 modulo 2^8); the mask reaches the top bit,
    so bits shifted out do not matter."""
    x = z3.BitVec("x", 8)
    wide = z3.ZeroExt(8, x) * z3.ZeroExt(8, z3.BitVecVal(205, 8))          # ⌈2^10/5⌉
    low = z3.Extract(7, 0, magic.rewrite(_shr(wide, 8)))
    exact = (low << 1) & 0xF8
    rewritten = magic.rewrite(exact)
    assert z3.is_app_of(rewritten, z3.Z3_OP_BMUL) and z3.is_app_of(rewritten.arg(0), z3.Z3_OP_BUDIV), rewritten
    assert _proves(rewritten == exact)
    below = (low << 1) & 0x78                   # the mask stops below the top bit and t·2 can exceed it
    assert magic.rewrite(below).eq(below)


def test_a_signed_product_is_left_alone():
    x = z3.BitVec("x", W)
    signed = z3.Extract(2 * W - 1, W, z3.SignExt(W, x) * z3.SignExt(W, z3.BitVecVal(0x5556, W)))
    assert magic.rewrite(signed).eq(signed)


def test_upper_bounds_hold():
    """Each structural bound is a bound: the solver finds no value above it."""
    a, b = z3.BitVec("a", 32), z3.BitVec("b", 32)
    wide = z3.ZeroExt(32, a) * z3.ZeroExt(32, z3.BitVecVal(256, 32)) + z3.ZeroExt(32, b & 255)
    for term in (wide, z3.UDiv(wide, 510), z3.URem(wide, 510), _shr(wide, 3), z3.Extract(15, 0, wide),
                 z3.If(a == 0, z3.ZeroExt(32, b), z3.BitVecVal(7, 64))):
        bound = magic.upper(term)
        assert _proves(z3.ULE(term, z3.BitVecVal(bound, term.size()))), term


def test_a_quotient_with_its_low_bits_cleared_is_a_multiple_of_the_division():
    """LLVM's `hi & 0x3FFFFFFFFF800000` reuses the mul.hi of x / d for (x / (d·2^j))·2^k (67_conv1d's batch
    offset): here hi = ⌊x·M/2^W⌋ with x / 10 = hi >> s, and the bits of hi below 2^(s+2) cleared."""
    x = z3.BitVec("x", W)
    m, s = _magic(10, W)
    hi = _mul_hi(x, m)
    top = magic.upper(hi).bit_length()
    mask = (1 << top) - (1 << (s + 2))
    exact = hi & mask
    rewritten = magic.rewrite(exact)
    assert not rewritten.eq(exact)
    assert _proves(rewritten == exact)
    gap = hi & (mask | 1)                       # not one run of ones: left alone
    assert magic.rewrite(gap).eq(gap)


def test_the_add_form_over_a_mul_hi_already_read_as_a_division():
    """42_maxpool2d: nvcc's add form for x / 130816 uses the mul.hi of x / 511, which is exact alone (s = 0)
    for a bounded x and was rewritten first; the add form is still recognised through it."""
    x = z3.ZeroExt(4, z3.BitVec("x", W - 4))
    m = -(-(1 << W) // 7)                      # ⌈2^12/7⌉: exact alone for x < 2^8
    hi = magic.rewrite(_mul_hi(x, m))
    assert z3.is_app_of(hi, z3.Z3_OP_BUDIV)
    exact = _shr(_shr(x - _mul_hi(x, m), 1) + _mul_hi(x, m), 2)
    rewritten = magic.rewrite(_shr(magic.rewrite(_shr(x - hi, 1) + hi), 2))
    assert z3.is_app_of(rewritten, z3.Z3_OP_BUDIV), rewritten
    assert _proves(rewritten == exact)


def test_a_quotient_shifted_left_then_masked():
    """42_maxpool2d's plane offset: `shl q, 1; and q, 0x3FFFFFFFFFFC0000` over the add form's q."""
    x = z3.ZeroExt(4, z3.BitVec("x", W - 4))
    m, s = _magic(10, W)
    hi = _mul_hi(x, m)
    top = (magic.upper(hi) << 1).bit_length()
    exact = (hi << 1) & ((1 << top) - (1 << (s + 2)))
    rewritten = magic.rewrite(exact)
    assert not rewritten.eq(exact)
    assert _proves(rewritten == exact)


def _index(e: z3.BitVecRef) -> z3.BitVecRef:
    """A pooling window's read: plane / (511·511), row / 511 mod 511, column mod 511 of a bounded e."""
    wide = z3.ZeroExt(32, e)
    return (z3.UDiv(wide, 261121) * 262144 + z3.URem(z3.UDiv(wide, 511), 511) * 512 + z3.URem(wide, 511))


def test_purified_divisions_keep_every_answer():
    """`purify.purified` is equisatisfiable with the formula for each pinned e (the quotients forced), and
    the out-of-bounds query it speeds up is still unsat, its off-by-one twin still sat."""
    e = z3.BitVec("e", 32)
    within = z3.And(z3.ULT(e, 534775808), z3.UGE(_index(e), 2048 * 262144))
    assert _proves(z3.Not(purify.purified(within)))
    outside = z3.And(z3.ULT(e, 534775808 + 1), z3.UGE(_index(e), 2048 * 262144))
    model_solver = z3.Solver()
    model_solver.add(purify.purified(outside))
    assert model_solver.check() == z3.sat
    witness = model_solver.model().eval(e, model_completion=True)
    assert _proves(z3.substitute(outside, (e, witness)))          # the model is one of the formula
    for value in (0, 510, 511, 261120, 261121, 534775807):
        pinned = z3.And(e == value, _index(e) == z3.BitVecVal(value // 261121 * 262144 + value // 511 % 511 * 512
                                                                + value % 511, 64))
        solver = z3.Solver()
        solver.add(purify.purified(pinned))
        assert solver.check() == z3.sat
        solver = z3.Solver()
        solver.add(purify.purified(z3.And(e == value, z3.Not(pinned))))
        assert solver.check() == z3.unsat


def test_purified_leaves_unbounded_and_power_of_two_divisions():
    x = z3.BitVec("x", 64)
    formula = z3.And(z3.UDiv(x, 510) == 3, z3.URem(z3.ZeroExt(32, z3.Extract(31, 0, x)), 512) == 1)
    assert purify.purified(formula).eq(formula)
