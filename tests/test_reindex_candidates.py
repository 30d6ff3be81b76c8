"""The reindexer's candidates (orchestrator/provers/reindex.py, untrusted): φ read off examples where no
read's index moves by a constant stride, as in a transposed convolution's box (icg, k) flattened to m."""

from __future__ import annotations

import z3

from orchestrator.provers import reindex

X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
W = z3.Function("w", z3.BitVecSort(64), z3.RealSort())
M, J = z3.BitVec("m", 64), z3.BitVec("j", 64)
T = z3.BitVec("tid.x", 32)
POS = z3.ZeroExt(32, T)   # the thread's output position


def _target() -> z3.ExprRef:
    """The reference's term at m: icg = m / 3, k = m % 3 (x at channel icg, position o - k; w at (icg, k))."""
    icg, k = z3.UDiv(M, 3), z3.URem(M, 3)
    return X(icg * 1000 + POS - k) * W(icg * 384 + k)


def _lane(t: int) -> z3.ExprRef:
    """Lane t of a loop unrolled by 4 channels x 3 taps: channel 4j + t / 3, tap t % 3."""
    icg, k = 4 * J + t // 3, t % 3
    return X(icg * 1000 + POS - k) * W(icg * 384 + k)


def _same(a: z3.BitVecRef, b: z3.BitVecRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.ULT(J, 32), a != b)
    return solver.check() == z3.unsat


def test_each_lane_gets_its_progression_from_examples() -> None:
    for t in range(12):
        found = reindex.candidates("k", _lane(t), J, _target(), M)
        assert any(_same(c, 12 * J + t) for c in found), (t, found)


def test_no_stride_pairing_finds_it() -> None:
    assert not any(_same(c, 12 * J + 5) for c in reindex._pairings(_lane(5), _target(), M))


def test_no_example_candidate_when_the_reads_do_not_pin_m() -> None:
    target = X(z3.UDiv(M, 3) * 1000 + POS)          # k is not read: three m name the same element
    assert list(reindex._by_example(X(4 * J * 1000 + POS), J, target, M)) == []


def test_examples_are_taken_where_the_source_term_reads() -> None:
    """A strided tap reads only where its position divides by the stride: the first example point is one where
    the term's guard holds, not a fixed value of every symbol (at 3 it would not)."""
    lane = z3.If(z3.URem(POS + 1, 5) == 0, X(J * 1000 + z3.UDiv(POS + 1, 5)) * W(J * 3), z3.RealVal(0))
    point = reindex._guard_point(lane, J, [T])
    assert point is not None
    solver = z3.Solver()
    solver.add(*point, z3.URem(POS + 1, 5) != 0)
    assert solver.check() == z3.unsat
    assert reindex._guard_point(X(POS), J, [T]) is None      # no guard: the fixed points are tried alone


def test_a_3d_box_decoded_from_m_is_read_off_examples() -> None:
    """A 3-D transposed convolution's box (icg, kd, kh, kw) flattened to m, the thread's (od, oh, ow) decoded from
    its position by divisions: each lane's φ(j) = 27j + t is read off two examples (KernelBench 61's kernel, at
    its own sizes, needs the examples' queries asked with their divisions named, `purified`)."""
    pos = z3.ZeroExt(32, T)
    o = [z3.URem(z3.UDiv(pos, 66 * 66), 66), z3.URem(z3.UDiv(pos, 66), 66), z3.URem(pos, 66)]

    def term(icg: z3.BitVecRef, k: list) -> z3.ExprRef:
        at = icg * 262144 + (o[0] - k[0]) * 4096 + (o[1] - k[1]) * 64 + (o[2] - k[2])
        return X(at) * W(icg * 27 + k[0] * 9 + k[1] * 3 + k[2])
    target = term(z3.UDiv(M, 27), [z3.URem(z3.UDiv(M, 9), 3), z3.URem(z3.UDiv(M, 3), 3), z3.URem(M, 3)])
    for t in (0, 13, 26):
        lane = term(J, [z3.BitVecVal(t // 9, 64), z3.BitVecVal(t // 3 % 3, 64), z3.BitVecVal(t % 3, 64)])
        found = reindex.candidates("k", lane, J, target, M)
        assert any(_same(c, 27 * J + t) for c in found), (t, found)
