"""`semantics.canonical`: copies of one reduction become one term, and every rewrite is an identity (z3 proves
`original != normal` unsat, STYLE 3)."""

import z3

from semantics.canonical import Normalizer, extremum
from semantics.ptx.neginf import NEG_INF

INDEX = z3.BitVecSort(64)
X = z3.Function("x", INDEX, z3.RealSort())
TID = z3.BitVec("tid.x", 32)
A, B, C, D = z3.Reals("a b c d")


def rmax(a, b):
    return z3.If(a >= b, a, b)


def rmin(a, b):
    return z3.If(a <= b, a, b)


def same_value(original: z3.ExprRef, normal: z3.ExprRef) -> bool:
    solver = z3.Solver()
    solver.add(original != normal)
    return solver.check() == z3.unsat


def lane(tid: z3.BitVecRef, mask: int, width: int = 5) -> z3.BitVecRef:
    """The tid.x of lane (tid ^ mask) of tid's group of 2^width lanes, written as `shfl.sync.bfly` writes it."""
    own = tid & ((1 << width) - 1)
    source = z3.If(z3.ULE(own ^ mask, (1 << width) - 1), own ^ mask, own)
    return z3.Concat(z3.Extract(31, width, tid), z3.Extract(width - 1, 0, source))


def load(tid: z3.BitVecRef, k: int = 0) -> z3.ArithRef:
    return X(z3.ZeroExt(32, tid) * 4 + 512 * k)


def butterfly(value: z3.ArithRef, masks: list[int], op=rmax, width: int = 5) -> z3.ArithRef:
    """An all-reduce as a kernel writes it: value = op(value, value at lane ^ m) for each m."""
    for m in masks:
        value = op(value, z3.substitute(value, (TID, lane(TID, m, width))))
    return value


def test_two_nestings_of_one_max_are_one_term():
    normal = Normalizer()
    left = rmax(rmax(A, B), rmax(C, D))
    right = rmax(D, rmax(B, rmax(C, A)))
    assert normal(left).eq(normal(right))
    assert extremum(normal(left)) == z3.Z3_OP_GE
    assert same_value(left, normal(left)) and same_value(right, normal(right))


def test_max_and_min_are_not_mixed():
    normal = Normalizer()
    mixed = rmax(A, rmin(B, rmax(C, D)))
    assert not normal(mixed).eq(normal(rmax(rmax(A, B), rmax(C, D))))
    assert same_value(mixed, normal(mixed))


def test_a_repeated_leaf_is_dropped_from_a_max_but_kept_in_a_sum():
    normal = Normalizer()
    assert normal(rmax(A, rmax(B, A))).eq(normal(rmax(B, A)))
    assert not normal(A + (B + A)).eq(normal(A + B))
    assert normal(A + (B + A)).eq(normal((A + A) + B))
    assert same_value(A + (B + A), normal(A + (B + A)))


def test_padded_leaves_keep_their_meaning():
    # neginf's max rules: max(a, If(c, v, a)) for one padded operand, and for two
    # If(c1 ∨ c2, max(If(c1, v1, v2), If(c2, v2, v1)), -inf); the marker is just a real constant here
    c1, c2 = z3.Bools("c1 c2")
    one = rmax(A, z3.If(c1, B, A))
    two = z3.If(z3.Or(c1, c2), rmax(z3.If(c1, C, D), z3.If(c2, D, C)), NEG_INF)
    tree = rmax(rmax(one, D), rmax(C, z3.If(c2, B, C)))
    normal = Normalizer()
    for term in (one, two, tree, z3.If(c1, tree, NEG_INF)):
        assert same_value(term, normal(term))
    assert normal(z3.If(z3.Or(c1, c2), rmax(z3.If(c2, D, C), z3.If(c1, C, D)), NEG_INF)).eq(normal(two))


def test_a_mask_test_that_became_constant_selects_its_branch():
    normal = Normalizer()
    padded = z3.If(z3.ULT(z3.BitVecVal(7, 32) | 896, 1000), load(TID), NEG_INF)
    assert normal(padded).eq(normal(load(TID)))
    masked = z3.If(z3.ULT(z3.BitVecVal(120, 32) | 896, 1000), load(TID), NEG_INF)
    assert normal(masked).eq(NEG_INF)


def test_a_lane_shuffled_twice_is_the_lane_shuffled_once():
    normal = Normalizer()
    twice = [lane(lane(TID, 16), 8), lane(lane(TID, 8), 16), lane(TID, 24)]
    forms = [normal(t) for t in twice]
    assert forms[0].eq(forms[1]) and forms[1].eq(forms[2])
    assert all(same_value(t, f) for t, f in zip(twice, forms, strict=True))


def test_complemented_slices_are_joined_exactly():
    normal = Normalizer()
    apart = z3.Concat(z3.Extract(6, 5, TID), ~z3.Extract(4, 4, TID), ~z3.Extract(3, 3, TID), z3.Extract(2, 0, TID))
    joined = normal(apart)
    assert "Extract(4, 3" in str(joined)
    assert same_value(apart, joined)
    assert joined.eq(normal(z3.Extract(6, 0, TID) ^ 0x18))


def test_every_lane_of_a_butterfly_holds_one_term():
    normal = Normalizer()
    reduced = normal(butterfly(rmax(load(TID, 0), load(TID, 1)), [16, 8, 4, 2, 1]))
    for m in (1, 5, 16, 31):
        assert normal(z3.substitute(reduced, (TID, lane(TID, m)))).eq(reduced)
    assert len(Normalizer().leaves.get(reduced.get_id(), [])) in (0, 64)
    assert len(normal.leaves[reduced.get_id()]) == 64


def test_a_butterfly_is_taken_at_the_first_lane_and_that_is_exact():
    # 4 lanes (2 bits), small enough for z3 to prove the value at every tid.x equals the one at tid.x & ~3
    normal = Normalizer(TID, 7)
    raw = butterfly(rmax(load(TID, 0), load(TID, 1)), [2, 1], width=2)
    settled = normal.uniform(raw)
    assert not z3.eq(settled, normal(raw))
    assert normal(z3.substitute(settled, (TID, TID ^ 1))).eq(settled)
    assert normal(z3.substitute(settled, (TID, TID ^ 2))).eq(settled)
    assert same_value(raw, settled)


def test_a_sum_butterfly_is_taken_at_the_first_lane_and_that_is_exact():
    normal = Normalizer(TID, 7)
    raw = butterfly(load(TID, 0) + load(TID, 1), [2, 1], op=lambda a, b: a + b, width=2)
    settled = normal.uniform(raw)
    assert normal(z3.substitute(settled, (TID, TID ^ 3))).eq(settled)
    assert same_value(raw, settled)


def test_a_partial_butterfly_keeps_the_bits_it_did_not_reduce():
    normal = Normalizer(TID, 7)
    raw = butterfly(load(TID), [1], width=2)           # lanes paired, the pairs not combined
    settled = normal.uniform(raw)
    assert normal(z3.substitute(settled, (TID, TID ^ 1))).eq(settled)
    assert not normal(z3.substitute(settled, (TID, TID ^ 2))).eq(settled)
    assert same_value(raw, settled)


def test_a_value_that_depends_on_its_lane_is_left_alone():
    normal = Normalizer(TID, 7)
    own = load(TID) + rmax(load(TID, 1), load(TID ^ 1, 1))   # x[t] itself is not lane-symmetric
    settled = normal.uniform(own)
    assert not normal(z3.substitute(settled, (TID, TID ^ 1))).eq(settled)
    assert same_value(own, settled)
    y = z3.Function("y", INDEX, z3.RealSort())
    lopsided = rmax(load(TID), y(z3.ZeroExt(32, TID ^ 1)))   # x at one lane, y at the other: no symmetry
    assert normal.uniform(lopsided).eq(normal(lopsided))
