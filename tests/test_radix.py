"""Divisions named as mixed-radix digits and index terms read as linear forms (`semantics.radix`,
`semantics.linear`, through `semantics.purify.purified`): trusted rewrites, so each is checked against the
solver (STYLE 3) — at pinned values of the free symbols the rewritten formula holds (its digits then forced)
exactly when the formula does — and on the convolution shapes it was written for."""

from __future__ import annotations

import random

import pytest
import z3

from semantics import guards, linear, purify, radix
from semantics.terms import subterms

W = 32


def _holds(formula: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(formula)
    return solver.check() == z3.sat


def _symbols() -> tuple[z3.BitVecRef, z3.BitVecRef, z3.BitVecRef, list[z3.BoolRef]]:
    a, b, c = z3.BitVecs("a b c", 16)
    return a, b, c, [z3.ULT(a, 37), z3.ULT(b, 1000), z3.ULT(c, 5)]


def _random_term(rng: random.Random, leaves: list[z3.BitVecRef], depth: int) -> z3.BitVecRef:
    """A W-bit index term of the operations the forms read, with divisions by members of the chain
    37 | 370 | 37000 | 74000 and by a few others."""
    if depth == 0 or rng.random() < 0.2:
        leaf = rng.choice(leaves)
        return z3.ZeroExt(W - leaf.size(), leaf) if leaf.size() < W else leaf
    x = _random_term(rng, leaves, depth - 1)
    y = _random_term(rng, leaves, depth - 1)
    choice = rng.randrange(21)
    if choice == 0:
        return x + y
    if choice == 1:
        return x * rng.choice([2, 3, 37, 1000, 4095])
    if choice == 2:
        return z3.UDiv(x, rng.choice([37, 370, 37000, 74000, 6, 4]))
    if choice == 3:
        return z3.URem(x, rng.choice([37, 10, 100, 370, 6, 16]))
    if choice == 4:
        return z3.ZeroExt(4, z3.Extract(W - 5, 0, x))
    if choice == 5:
        return z3.Concat(z3.Extract(W - 3, 0, x), z3.BitVecVal(0, 2))
    if choice == 6:
        return z3.LShR(x, rng.choice([1, 2, 3]))
    if choice == 7:
        return z3.ZeroExt(2, z3.Extract(W - 1, 2, x))
    if choice == 8:
        return x - rng.choice([0, 1, 7])
    if choice == 9:
        return (x << 4) | z3.URem(y, 16)
    if choice == 10:
        return z3.SignExt(16, z3.Extract(15, 0, x))
    if choice == 11:
        return x | y
    if choice == 12:
        k = rng.choice([3, 6, 9, 13])
        return z3.ZeroExt(W - k - 1, z3.Extract(k, 0, x))
    if choice == 13:
        k = rng.choice([3, 6, 9, 13])
        return z3.Concat(z3.BitVecVal(0, W - k - 1), z3.Extract(k, 0, x))
    if choice == 14:   # a padding guard on a shifted coordinate, the read under it
        shift = rng.choice([1, 2, 4, 40])
        return z3.If(z3.ULT(x - shift, rng.choice([30, 500, 1000])), (x - shift) * 3 + y, y - x)
    if choice == 15:   # an int coordinate with a negative offset, sign-extended
        return z3.SignExt(16, z3.Extract(15, 0, x) - rng.choice([1, 4, 300]))
    if choice == 16:   # the same past the sign bit for some values
        return z3.SignExt(16, z3.Extract(15, 0, x) * 977 - 5)
    if choice == 18:   # bit fields: the high bits of one term over the low bits of another
        return z3.Concat(z3.Extract(W - 1, 9, x), z3.Extract(8, 0, y))
    if choice == 19:   # an or of fields the way z3 distributes it over a concatenation
        return z3.Concat(z3.Extract(W - 10, 0, x) | z3.Extract(W - 1, 9, y), z3.Extract(8, 0, y))
    if choice == 17:   # a guard on one coordinate whose wrapped values pass too (no bound may be read off it)
        leaf = rng.choice(leaves)
        v = z3.ZeroExt(W - leaf.size(), leaf) if leaf.size() < W else leaf
        low = z3.ZeroExt(8, z3.Extract(W - 9, 0, 7 * v - 70))   # exact only where v ≥ 10
        return z3.If(z3.ULT(v - 10, rng.choice([(1 << W) - 3, 20])), low, y)
    return z3.Concat(z3.BitVecVal(0, 8), z3.Extract(W - 9, 0, x))


def _point(rng: random.Random, symbols) -> list[tuple[z3.BitVecRef, z3.BitVecRef]]:
    a, b, c = symbols
    return [(a, z3.BitVecVal(rng.randrange(37), 16)), (b, z3.BitVecVal(rng.randrange(1000), 16)),
            (c, z3.BitVecVal(rng.randrange(5), 16))]


@pytest.mark.parametrize("seed", range(12))
def test_rewritten_formulas_hold_exactly_where_the_formula_does(seed: int):
    """A random index term t and a random point P: t = t(P) still holds at P once rewritten (the digits then
    forced), and t = t(P) + 1 does not; so does a comparison of two terms."""
    rng = random.Random(seed)
    a, b, c, bounds = _symbols()
    value = z3.ZeroExt(16, a) + 37 * z3.ZeroExt(16, b) + 37000 * z3.ZeroExt(16, c)   # one base value
    leaves = [a, b, c, z3.UDiv(value, 37), z3.URem(z3.UDiv(value, 37), 10), z3.URem(value, 37),
              z3.UDiv(value, 370), z3.URem(z3.UDiv(value, 370), 100), z3.UDiv(value, 37000)]
    for _ in range(8):
        t, u = _random_term(rng, leaves, 3), _random_term(rng, leaves, 3)
        point = _point(rng, (a, b, c))
        at = z3.simplify(z3.substitute(t, *point))
        for claim in (t == at, t == at + 1, z3.ULT(t, u)):
            # (the last conjunct, always true, makes the value a base even where t divides nothing)
            formula = z3.And(*bounds, claim, z3.ULE(z3.URem(z3.UDiv(value, 37), 10), 9))
            expected = z3.is_true(z3.simplify(z3.substitute(formula, *point)))
            assert _holds(z3.substitute(purify.purified(formula), *point)) == expected


@pytest.mark.parametrize("seed", range(4))
def test_the_divisions_found_in_one_walk_are_those_liftable_names(seed: int):
    """`_divisions` (one walk for the bound variables' reach, one for the divisions) finds exactly the subterms
    `_liftable` accepts, in the order of `subterms`: on random index terms, and beside a lambda whose body divides
    its bound variable (not liftable) and a constant (liftable)."""
    rng = random.Random(seed)
    a, b, c, bounds = _symbols()
    value = z3.ZeroExt(16, a) + 37 * z3.ZeroExt(16, b) + 37000 * z3.ZeroExt(16, c)
    leaves = [a, b, c, z3.UDiv(value, 37), z3.URem(z3.UDiv(value, 37), 10), z3.URem(value, 37), z3.UDiv(value, 0)]
    k = z3.Var(0, z3.BitVecSort(W))
    bound = z3.Lambda([z3.BitVec("k", W)], z3.UDiv(k, 3) + z3.URem(value, 7))   # a body under a binder
    for _ in range(6):
        formula = z3.And(*bounds, _random_term(rng, leaves, 3) == _random_term(rng, leaves, 3), bound[value] == 0)
        expected = [t for t in subterms(formula) if radix._liftable(t)]
        found = radix._divisions(formula)
        assert len(found) == len(expected) and all(f.eq(e) for f, e in zip(found, expected, strict=True))
        assert any(z3.is_app(t) and not radix._liftable(t) and t.decl().kind() == z3.Z3_OP_BUDIV
                   and any(z3.is_var(u) for u in subterms(t)) for t in subterms(formula))


def test_a_model_of_the_named_formula_is_a_model_of_the_formula():
    a, b, c, bounds = _symbols()
    value = z3.ZeroExt(16, a) + 37 * z3.ZeroExt(16, b) + 37000 * z3.ZeroExt(16, c)
    kernel = z3.URem(value, 37) + 1024 * z3.URem(z3.UDiv(value, 37), 1000)
    formula = z3.And(*bounds, kernel == 1024 * 999 + 36, z3.UDiv(value, 37000) == 3)
    solver = z3.Solver()
    solver.add(radix.named(formula))
    assert solver.check() == z3.sat
    model = solver.model()
    point = [(s, model.eval(s, model_completion=True)) for s in (a, b, c)]
    assert z3.is_true(z3.simplify(z3.substitute(formula, *point)))
    assert [model.eval(s).as_long() for s in (a, b, c)] == [36, 999, 3]


def test_a_convolution_index_becomes_one_term():
    """63_conv2d_square's read of x: the kernel's strength-reduced 62-bit index against the reference's
    decoded one are the same term once read through the output index's digits."""
    tid, ctaid, j = z3.BitVec("tid.x", 32), z3.BitVec("ctaid.x", 32), z3.BitVec("j", 64)
    idx = z3.ZeroExt(32, tid) + 256 * z3.ZeroExt(32, ctaid)
    narrow = z3.ZeroExt(30, tid) + 256 * z3.ZeroExt(30, ctaid)

    def low(q: z3.BitVecRef) -> z3.BitVecRef:
        return z3.Extract(61, 0, q)
    kernel = narrow + 2 * low(z3.UDiv(idx, 1022)) + 16777216 * low(z3.UDiv(idx, 133693952)) \
        - 1046528 * low(z3.UDiv(idx, 1044484))
    kernel_index = z3.ZeroExt(2, z3.Extract(63, 2, 8200 + 4194304 * j + z3.Concat(kernel, z3.BitVecVal(0, 2))))
    m = 8 + 9 * j
    reference_index = z3.UDiv(idx, 133693952) * 16777216 + z3.UDiv(m, 9) * 1048576 + \
        (z3.URem(z3.UDiv(idx, 1022), 1022) + z3.URem(z3.UDiv(m, 3), 3)) * 1024 + \
        z3.URem(z3.ZeroExt(2, narrow), 1022) + z3.URem(m, 3)
    formula = z3.And(z3.ULT(ctaid, 8355872), z3.ULT(tid, 256), z3.ULT(j, 16), kernel_index != reference_index)
    rewritten = radix.named(formula)
    differs = next(f for f in linear.conjuncts(rewritten) if z3.is_not(f) and z3.is_eq(f.arg(0)) or
                   z3.is_distinct(f))
    sides = differs.arg(0).children() if z3.is_not(differs) else differs.children()
    assert sides[0].eq(sides[1])
    assert not _holds(purify.purified(formula))


@pytest.mark.parametrize("value", range(12))
def test_an_exact_division_with_a_falling_term(value: int):
    """(26 − x) / 8 and (26 − x) % 8 where the guard 5 ≤ x ≤ 8 holds: the rest 26 − x is no remainder
    (26 − x ≥ 8), so it is no exact division; the rewrite must agree with the formula at every x."""
    x = z3.BitVec("x", 32)
    read = z3.If(z3.ULT(x - 5, 4), z3.UDiv(26 - x, 8) * 100 + z3.URem(26 - x, 8), z3.BitVecVal(7, 32))
    expected = (26 - value) // 8 * 100 + (26 - value) % 8 if 5 <= value <= 8 else 7
    for k in (expected, expected + 1):
        formula = z3.And(z3.ULT(x, 12), read == k)
        pinned = z3.substitute(purify.purified(formula), (x, z3.BitVecVal(value, 32)))
        assert _holds(pinned) == (k == expected)


def test_no_chain_no_digits():
    """Divisions of one value by 6 and by 4 (no divisibility chain) are left to the one-by-one naming."""
    x = z3.BitVec("x", 16)
    wide = z3.ZeroExt(16, x)
    formula = z3.And(z3.ULT(x, 1000), z3.UDiv(wide, 6) == z3.UDiv(wide, 4))
    replaced, facts, bases = radix.digits(formula)
    assert not bases and not facts and replaced.eq(formula)


def test_exact_division_of_a_strided_index():
    """(8 + 9·j) / 9 = j and (8 + 9·j) % 3 = 2 for j < 16; nothing is asked of an unbounded j."""
    j = z3.BitVec("j", 64)
    bounded = radix.exact_divisions(z3.And(z3.ULT(j, 16), z3.UDiv(8 + 9 * j, 9) != j))
    assert not any(z3.is_app_of(t, z3.Z3_OP_BUDIV) for t in linear.conjuncts(bounded))
    assert not _holds(bounded)
    unbounded = z3.UDiv(8 + 9 * j, 9) != j
    assert radix.exact_divisions(unbounded).eq(unbounded)


def test_disjoint_bit_fields_read_as_a_sum():
    """`(q << 7) | r` with r < 128 is q·128 + r (a bit-field insert); with r < 256 it stays an atom."""
    q, r = z3.BitVecs("q r", 32)
    forms = linear.Forms(linear.Bounds(z3.And(z3.ULT(q, 1000), z3.ULT(r, 128))))
    found = forms.natural((q << 7) | r)
    assert found is not None and found.key() == linear.form({q.get_id(): 128, r.get_id(): 1}, 0).key()
    loose = linear.Forms(linear.Bounds(z3.And(z3.ULT(q, 1000), z3.ULT(r, 256))))
    term = (q << 7) | r
    assert loose.natural(term).key() == linear.form({term.get_id(): 1}, 0).key()


def test_a_stated_bound_of_a_sum_does_not_make_it_exact():
    """t < 10 stated of a sum that can wrap says nothing about its parts: no natural form is read off it."""
    x, y = z3.BitVecs("x y", 8)
    forms = linear.Forms(linear.Bounds(z3.ULT(x + y, 10)))
    assert forms.natural(x + y) is None


def test_a_guard_states_a_coordinate_interval_only_where_no_wrapped_value_passes():
    """ih − 2 < 5 (unsigned) with ih < 10 says 2 ≤ ih ≤ 6; ih − 10 < 2^32 − 3 says nothing (ih = 3 passes
    it wrapped); Extract(31, 9, ow − 4) = 0 says 4 ≤ ow ≤ 515 as `ow - 4 < 512` does."""
    ih, ow = z3.BitVec("ih", 32), z3.BitVec("ow", 32)
    forms = linear.Forms(linear.Bounds(z3.And(z3.ULT(ih, 10), z3.ULT(ow, 1000))))
    assert {t.get_id(): i for t, i in guards.bounds_of(forms, z3.ULT(ih - 2, 5)).values()} == {ih.get_id(): (2, 6)}
    assert guards.bounds_of(forms, z3.ULT(ih - 10, (1 << 32) - 3)) == {}
    masked = z3.Extract(31, 9, ow - 4) == 0
    assert [i for _, i in guards.bounds_of(forms, masked).values()] == [(4, 515)]
    both = z3.And(z3.Not(z3.ULE(5, ih - 2)), (z3.Extract(31, 9, ow - 4) | z3.Extract(31, 9, ih)) == 0)
    assert sorted(i for _, i in guards.bounds_of(forms, both).values()) == [(2, 6), (4, 515)]


def test_two_padding_tests_of_one_coordinate_become_one_guard():
    """`ih >= 0 && ih < 512` as nvcc writes it in 32 bits (the high bits of ih − 2 clear) and as the reference's
    one unsigned 64-bit compare give the same canonical guard; a test of ih − 1 does not."""
    h = z3.BitVec("h", 64)
    forms = linear.Forms(linear.Bounds(z3.ULT(h, 508)))
    kernel = (z3.Extract(31, 9, z3.Extract(31, 0, h) - 2) | z3.Extract(31, 9, z3.Extract(31, 0, h))) == 0
    reference = z3.ULT(h - 2, 512)
    assert guards.canonical(forms, kernel).eq(guards.canonical(forms, reference))
    assert not guards.canonical(forms, z3.ULT(h - 1, 512)).eq(guards.canonical(forms, reference))
    assert guards.canonical(forms, z3.And(reference, z3.Or(h == 5, h == 7))) is None


@pytest.mark.parametrize("signed", [True, False])
def test_divisions_of_a_three_dimensional_grid_index(signed: bool):
    """A 3-D grid's output index e = ow + 1022·oh + 1044484·z (ow = 256·ctaid.x + tid.x, guarded ow ≤ 1021 as
    a signed int or unsigned test): the reference's e % 1022, e / 1022 % 1022 and e / 133693952 are read off
    the coordinates (the guard's interval of the two-atom ow, Euclid, and ⌊(a·Q + R)/(a·128)⌋ = ⌊Q/128⌋), and
    the rewritten formula agrees with the formula at every point, the unguarded ow = 1022 included."""
    tid, cx, cy, cz = (z3.BitVec(n, 32) for n in ("tid.x", "ctaid.x", "ctaid.y", "ctaid.z"))
    ow = tid + 256 * cx
    e = z3.ZeroExt(32, ow + 1022 * cy + 1044484 * cz)
    guard = ow <= 1021 if signed else z3.ULE(ow, 1021)
    bounds = [z3.ULT(tid, 256), z3.ULT(cx, 4), z3.ULT(cy, 1022), z3.ULT(cz, 2048)]
    rng = random.Random(5)
    for _ in range(12):
        point = [(v, z3.BitVecVal(rng.randrange(n), 32)) for v, n in ((tid, 256), (cx, 4), (cy, 1022), (cz, 2048))]
        values = [z3.simplify(z3.substitute(t, *point)) for t in (z3.URem(e, 1022), z3.URem(z3.UDiv(e, 1022), 1022),
                                                                   z3.UDiv(e, 133693952))]
        claims = [z3.URem(e, 1022) == values[0], z3.URem(z3.UDiv(e, 1022), 1022) == values[1],
                  z3.UDiv(e, 133693952) == values[2] + rng.choice([0, 1])]
        formula = z3.And(*bounds, guard, *claims)
        rewritten = radix.exact_divisions(formula)
        expected = z3.is_true(z3.simplify(z3.substitute(formula, *point)))
        assert _holds(z3.substitute(rewritten, *point)) == expected
    left = purify.by_constant(radix.exact_divisions(z3.And(*bounds, guard, z3.UDiv(e, 133693952) == 3)))
    assert [t.arg(1).as_long() for t in left] == [128]   # ⌊z / 128⌋: bits


def test_a_signed_test_of_a_negative_int_states_nothing():
    """x + 16·y + 2^31 − 2 ≤ 5 as a signed int holds for the negative values too: no interval is read off it,
    while the same test of x + 16·y (never negative) states [0, 5]."""
    x, y = z3.BitVecs("x y", 32)
    bounds = linear.Bounds(z3.And(z3.ULT(x, 16), z3.ULT(y, 4)))
    negative = linear.Forms(bounds)
    guards.state(negative, x + 16 * y + (1 << 31) - 2 <= 5)
    assert negative.stated == []
    plain = linear.Forms(bounds)
    guards.state(plain, x + 16 * y <= 5)
    assert [interval for _, interval in plain.stated] == [(0, 5)]
