"""The kernel rule `tiled_union` (semantics/proof/unions.py): a reduction split into parts, each possibly one
template at the points of a box, equals the reference's comprehension when the parts' elements are the
reference's at affine indices that tile its range; and the inputs it must refuse."""

from __future__ import annotations

import pytest
import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import max_over, sum_over
from semantics.proof import Refused, replay, sums
from semantics.proof.unions import tiled_union
from semantics.tiling import covers

CHECK, T = Z3Checker(), 20.0
x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
m, j, tau = z3.BitVec("m", 64), z3.BitVec("j", 64), z3.BitVec("tau", 64)
TRUE = z3.BoolVal(True)
N, THREADS = 1024, 4          # a row of N, each of THREADS threads taking every THREADS-th element


def thread_sum(t: int) -> z3.ExprRef:
    k = z3.BitVec(f"k{t}", 64)
    return sum_over(0, N // THREADS, k, x(t + THREADS * k))


def thread_max(t: int) -> z3.ExprRef:   # started at its first element, then the rest of its slice
    k = z3.BitVec(f"k{t}", 64)
    return max_over(x(z3.BitVecVal(t, 64)), 1, N // THREADS, k, x(t + THREADS * k))


def tree(leaves: list[z3.ExprRef]) -> z3.ExprRef:
    while len(leaves) > 1:
        a, b = leaves[0], leaves[1]
        leaves = [*leaves[2:], z3.If(a >= b, a, b)]
    return leaves[0]


SUM_REF = sum_over(0, N, m, x(m))
MAX_REF = max_over(x(z3.BitVecVal(0, 64)), 1, N, m, x(m))
SUM_TEMPLATE = sum_over(0, N // THREADS, j, x(tau + THREADS * j))
MAX_TEMPLATE = max_over(x(tau), 1, N // THREADS, j, x(tau + THREADS * j))
POINTS = tuple((t,) for t in range(THREADS))


def sum_part(members=None, image=(0, THREADS, (1,)), points=POINTS):
    members = tuple(thread_sum(t) for t in range(THREADS)) if members is None else members
    return (members, SUM_TEMPLATE, ((tau, THREADS),), points, j, 0, N // THREADS, True, (image,))


def max_parts(image=(THREADS, THREADS, (1,)), inits=None):
    comps = (tuple(thread_max(t) for t in range(THREADS)), MAX_TEMPLATE, ((tau, THREADS),), POINTS, j, 1,
             N // THREADS, True, (image,))
    # the threads' starting values x(t): t = 0 is the reference's own start, the others its elements 1..3
    starts = (tuple(x(z3.BitVecVal(t, 64)) for t in range(THREADS)) if inits is None else inits, x(tau),
              ((tau, THREADS),), POINTS, j, 0, 1, True, (None,))
    return comps, starts


def test_folded_partial_sums_equal_the_row_sum():
    members = tuple(thread_sum(t) for t in range(THREADS))
    th = tiled_union(SUM_REF, z3.Sum(members), (sum_part(),), (0, N), CHECK, T, TRUE)
    assert th.conclusion.eq(z3.Implies(TRUE, SUM_REF == z3.Sum(members)))
    assert replay(th.step, CHECK, T).conclusion.eq(th.conclusion)


def test_a_max_tree_of_folded_partial_maxima_equals_the_row_max():
    """Thread t's start x(t) is an element of its own: x(0) is the reference's start (a part whose lane's image is
    None), x(1..3) the reference's elements 1..3 (a part folded over t - 1 with image 1 + τ)."""
    leaves = [thread_max(t) for t in range(THREADS)]
    kernel = tree(leaves)
    comps, _ = max_parts()
    first = ((x(z3.BitVecVal(0, 64)),), x(z3.BitVecVal(0, 64)), (), ((),), j, 0, 1, True, (None,))
    others = (tuple(x(z3.BitVecVal(t, 64)) for t in range(1, THREADS)), x(tau + 1), ((tau, THREADS - 1),),
              tuple((t,) for t in range(THREADS - 1)), j, 0, 1, True, ((1, 1, (1,)),))
    th = tiled_union(MAX_REF, kernel, (comps, first, others), (1, N), CHECK, T, TRUE)
    assert th.conclusion.eq(z3.Implies(TRUE, MAX_REF == kernel))
    with pytest.raises(Refused, match="cover"):   # every start taken as the reference's: 1..3 left uncovered
        tiled_union(MAX_REF, kernel, max_parts(), (1, N), CHECK, T, TRUE)


@pytest.mark.parametrize("parts, match", [
    ((sum_part(members=tuple(thread_sum(t) for t in range(THREADS - 1)), points=POINTS[:-1]),),
     "kernel term is not the sum"),                                                    # a thread left out
    ((sum_part(image=(0, THREADS, (2,))),), "cover"),                                  # wrong slope: a gap
    ((sum_part(image=(THREADS - 1, THREADS, (-1,))),), "into"),                        # threads in reverse
    ((sum_part(image=(0, 1, (1,))),), "cover"),                                        # overlapping slices
    ((sum_part(points=POINTS[:-1] + ((0,),)),), "points"),                             # a point twice
    ((sum_part(image=(-4, THREADS, (1,))),), "wraps|cover"),                           # below 0
])
def test_a_wrong_tiling_is_refused(parts, match):
    members = tuple(thread_sum(t) for t in range(THREADS))
    with pytest.raises(Refused, match=match):
        tiled_union(SUM_REF, z3.Sum(members), parts, (0, N), CHECK, T, TRUE)


def test_members_equal_to_the_template_after_simplify_need_no_fold_obligation():
    """Each thread's Sum is the template at its point up to z3.simplify: no fold obligation is asked. A member
    written another way (rotated right and back left: the same element) is asked about (and proved)."""
    members = tuple(thread_sum(t) for t in range(THREADS))
    names = [ob.name for ob, _ in tiled_union(SUM_REF, z3.Sum(members), (sum_part(),), (0, N), CHECK, T,
                                              TRUE).evidence]
    assert not any("fold" in n for n in names) and any("into" in n for n in names)
    k = z3.BitVec("k", 64)
    rotated = z3.RotateLeft(z3.RotateRight(THREADS - 1 + THREADS * k, 1), 1)
    odd = members[:-1] + (sum_over(0, N // THREADS, k, x(rotated)),)
    th = tiled_union(SUM_REF, z3.Sum(odd), (sum_part(members=odd),), (0, N), CHECK, T, TRUE)
    assert any("fold" in ob.name for ob, _ in th.evidence)


def test_a_lone_member_whose_bounds_are_not_the_parts_is_refused():
    """A part with no axes whose one member is its template: the member's own bounds must still be the
    part's [lo_P, hi_P), or Σ_{[0,4)} x = Σ_{[0,8)} x would follow (the fold obligation was once skipped here)."""
    source, member = sum_over(0, 4, m, x(m)), sum_over(0, 8, j, x(j))
    part = ((member,), member, (), ((),), j, 0, 4, True, ((0, 1, ()),))
    with pytest.raises(Refused, match="fold"):
        tiled_union(source, member, (part,), (0, 4), CHECK, T, TRUE)
    right = sum_over(0, 4, j, x(j))
    assert tiled_union(source, right, (((right,), right, (), ((),), j, 0, 4, True, ((0, 1, ()),)),), (0, 4), CHECK,
                       T, TRUE).states(z3.Implies(TRUE, source == right))


def test_a_range_is_what_the_hypothesis_forces():
    members = tuple(thread_sum(t) for t in range(THREADS))
    n = z3.BitVec("n", 64)
    source = sum_over(0, n, m, x(m))
    with pytest.raises(Refused, match="range"):
        tiled_union(source, z3.Sum(members), (sum_part(),), (0, N), CHECK, T, TRUE)
    th = tiled_union(source, z3.Sum(members), (sum_part(),), (0, N), CHECK, T, n == N)
    assert th.conclusion.eq(z3.Implies(n == N, source == z3.Sum(members)))


def test_another_kind_is_refused():
    members = tuple(thread_sum(t) for t in range(THREADS))
    with pytest.raises(Refused, match="not a Sum"):
        tiled_union(x(m), z3.Sum(members), (sum_part(),), (0, N), CHECK, T, TRUE)


def test_a_max_whose_start_is_no_kernel_element_is_refused():
    leaves = [thread_max(t) for t in range(THREADS)]
    comps, _ = max_parts()
    others = (tuple(x(z3.BitVecVal(t, 64)) for t in range(THREADS)), x(tau), ((tau, THREADS),), POINTS, j, 0, 1,
              True, ((0, 1, (1,)),))   # x(0) read as an element at index 0, outside [1, N)
    with pytest.raises(Refused, match="cover|initial"):
        tiled_union(MAX_REF, tree(leaves), (comps, others), (1, N), CHECK, T, TRUE)


def test_covers_counts_residue_classes_without_enumerating_the_range():
    assert covers([(t, 256, 1 << 20) for t in range(256)], 0, 256 << 20, exact=True)
    assert not covers([(t, 256, 1 << 20) for t in range(255)], 0, 256 << 20, exact=False)
    assert not covers([(0, 1, 10), (5, 1, 10)], 0, 15, exact=True) and covers([(0, 1, 10), (5, 1, 10)], 0, 15, False)


def padded_row(n: z3.ExprRef) -> z3.ExprRef:
    """A masked load's accumulation over a whole block of 1024: columns past n read as 0."""
    k = z3.BitVec("k", 64)
    return sum_over(0, 1024, k, z3.If(z3.ULT(k, n), x(k), z3.RealVal(0)))


def one_lane(head: z3.ExprRef) -> tuple:
    v = z3.BitVec("v", 64)
    return ((v, z3.substitute_vars(padded_row(z3.BitVec("n", 64)).arg(2).body(), v), head),)


def test_a_sum_whose_tail_vanishes_equals_its_head():
    n = z3.BitVec("n", 64)
    head = sum_over(0, n, m, x(m))
    under = z3.ULE(n, 1024)
    th = sums.sum_apart(padded_row(n), one_lane(head), CHECK, T, under)
    assert th.conclusion.eq(z3.Implies(under, padded_row(n) == head))
    assert replay(th.step, CHECK, T).conclusion.eq(th.conclusion)


@pytest.mark.parametrize("head, under, match", [
    (sum_over(0, z3.BitVec("n", 64) + 1, m, x(m)), z3.ULE(z3.BitVec("n", 64), 1000), "head"),  # a padded column kept
    (sum_over(0, z3.BitVec("n", 64), m, x(m)), TRUE, "cut"),                                  # n may pass 1024
    (sum_over(1, z3.BitVec("n", 64), m, x(m)), TRUE, "is not a Sum from"),                      # another start
    (sum_over(0, z3.BitVec("n", 64), m, 2 * x(m)), z3.ULE(z3.BitVec("n", 64), 1024), "head"),
])
def test_a_wrong_cut_is_refused(head, under, match):
    with pytest.raises(Refused, match=match):
        sums.sum_apart(padded_row(z3.BitVec("n", 64)), one_lane(head), CHECK, T, under)


def tile(n: z3.ExprRef) -> z3.ExprRef:
    """Two lanes per iteration over whole tiles of 8 (64 terms): lane 2k reads x(2k), lane 2k+1 x(2k+1), 0 past n."""
    k = z3.BitVec("k", 64)
    return sum_over(0, 32, k, z3.If(z3.ULT(2 * k, n), x(2 * k), z3.RealVal(0)) +
                    z3.If(z3.ULT(2 * k + 1, n), x(2 * k + 1), z3.RealVal(0)))


def test_a_sum_taken_apart_into_lanes_with_zero_tails():
    v = z3.BitVec("v", 64)
    lanes = ((v, z3.If(z3.ULT(2 * v, 40), x(2 * v), z3.RealVal(0)), sum_over(0, 20, v, x(2 * v))),
             (v, z3.If(z3.ULT(2 * v + 1, 40), x(2 * v + 1), z3.RealVal(0)), sum_over(0, 20, v, x(2 * v + 1))))
    th = sums.sum_apart(tile(z3.BitVecVal(40, 64)), lanes, CHECK, T)
    assert th.conclusion.eq(tile(z3.BitVecVal(40, 64)) == lanes[0][2] + lanes[1][2])
    assert replay(th.step, CHECK, T).conclusion.eq(th.conclusion)
    dropped = lanes[:1]   # a lane left out: the body is not the lanes' sum
    with pytest.raises(Refused, match="lanes"):
        sums.sum_apart(tile(z3.BitVecVal(40, 64)), dropped, CHECK, T)
    early = (lanes[0], (v, lanes[1][1], sum_over(0, 19, v, x(2 * v + 1))))   # a nonzero term cut off
    with pytest.raises(Refused, match="tail"):
        sums.sum_apart(tile(z3.BitVecVal(40, 64)), early, CHECK, T)
    with pytest.raises(Refused, match="head|is not a Sum from"):
        sums.sum_apart(tile(z3.BitVecVal(40, 64)), ((v, lanes[0][1], sum_over(1, 20, v, x(2 * v))), lanes[1]),
                       CHECK, T)


def test_sums_apart_cuts_many_sums_with_one_obligation_per_condition():
    """Two padded rows cut at once: the conclusion is the conjunction of their equations, stated by four side
    conditions, not four per Sum; a wrong head in either piece refuses the whole application."""
    n = z3.BitVec("n", 64)
    under = z3.ULE(n, 1000)
    second = sum_over(0, 1024, m, z3.If(z3.ULT(m, n), x(m + 2000), z3.RealVal(0)))
    v = z3.BitVec("v", 64)
    pieces = ((padded_row(n), one_lane(sum_over(0, n, m, x(m)))),
              (second, ((v, z3.substitute_vars(second.arg(2).body(), v), sum_over(0, n, m, x(m + 2000))),)))
    th = sums.sums_apart(pieces, CHECK, T, under)
    assert th.conclusion.eq(z3.Implies(under, z3.And(padded_row(n) == sum_over(0, n, m, x(m)),
                                                     second == sum_over(0, n, m, x(m + 2000)))))
    assert len(th.evidence) == 4
    assert replay(th.step, CHECK, T).conclusion.eq(th.conclusion)
    wrong = (pieces[0], (second, ((v, pieces[1][1][0][1], sum_over(0, n, m, x(m + 2001))),)))
    with pytest.raises(Refused, match="head"):
        sums.sums_apart(wrong, CHECK, T, under)
