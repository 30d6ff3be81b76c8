"""Padded max pooling windows: the reference's small MaxFrom unrolled against a kernel that takes its taps under
guards (`extremum_windows`), and the lane proved tap by tap (`extremum_taps`). Each returns a theorem about
exactly its inputs, or nothing when its inputs do not match (a wrong tap, no guard)."""

from __future__ import annotations

import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import max_over
from semantics.properties import extremum_taps, extremum_windows

CHECK = Z3Checker()
X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
T = z3.BitVec("tid.x", 32)
HYP = z3.ULT(T, 256)
TAPS = 3   # padding 1: tap 0 is outside for thread 0, tap 2 for thread 255, tap 1 never


def record(*_args) -> None:
    pass


def tap(k: int, offset: int = 1) -> z3.BitVecRef:
    return z3.ZeroExt(32, T) + k - offset


def kernel_chain(offset: int = 1) -> z3.ArithRef:
    """`acc = x[t]; if (inside) acc = fmaxf(acc, x[t - 1]); if (inside) acc = fmaxf(acc, x[t + 1])`: the middle
    tap first (always inside), the others under their guards, as a chain of Ifs on guards and comparisons."""
    acc = X(tap(1, offset))
    for k in (0, 2):
        read = X(tap(k, offset))
        acc = z3.If(z3.ULT(tap(k, offset), 256), z3.If(read >= acc, read, acc), acc)
    return acc


def reference() -> z3.ArithRef:
    """max over the window, each tap outside replaced by the first tap inside (as the ATen capture states it)."""
    w = z3.BitVec("w", 64)
    first = z3.If(z3.ULT(tap(0), 256), tap(0), tap(1))
    at = z3.ZeroExt(32, T) + w - 1
    return max_over(X(first), 0, TAPS, w, X(z3.If(z3.ULT(at, 256), at, first)))


def claim(kernel: z3.ArithRef, ref: z3.ArithRef) -> z3.BoolRef:
    return z3.Not(z3.And(HYP, kernel != ref))


def test_a_guarded_running_max_is_conditional_and_a_plain_one_is_not() -> None:
    assert extremum_windows.conditional(kernel_chain())
    a, b = X(tap(0)), X(tap(1))
    assert not extremum_windows.conditional(z3.If(a >= b, a, b))            # no guard
    assert not extremum_windows.conditional(z3.If(HYP, a, b))               # no comparison


def test_the_window_is_unrolled_by_the_kernels_unroll_with_its_step() -> None:
    ref = reference()
    unrolled, steps = extremum_windows.rewrite(kernel_chain(), ref, HYP, CHECK, 10.0, record)
    assert "MaxFrom" not in str(unrolled) and len(steps) == 1
    assert steps[0].equation.rule == "unroll"
    assert steps[0].equation.states(z3.Implies(HYP, ref == unrolled))
    plain = X(tap(1))   # a kernel with no guarded max: the reference stays as it is
    assert extremum_windows.rewrite(plain, ref, HYP, CHECK, 10.0, record)[0].eq(ref)


def test_the_lane_is_proved_tap_by_tap_and_a_wrong_tap_is_not() -> None:
    unrolled, _ = extremum_windows.rewrite(kernel_chain(), reference(), HYP, CHECK, 10.0, record)
    good = claim(kernel_chain(), unrolled)
    assert extremum_taps.applies(good, kernel_chain(), unrolled)
    theorem = extremum_taps.prove(good, kernel_chain(), unrolled, HYP, CHECK, 10.0, "lane", record)
    assert theorem is not None and theorem.states(good)
    shifted = kernel_chain(offset=0)   # the window one tap late: padding 0 where the reference pads 1
    bad = claim(shifted, unrolled)
    assert extremum_taps.prove(bad, shifted, unrolled, HYP, CHECK, 10.0, "lane", record) is None
    solver = z3.Solver()
    solver.add(z3.Not(bad))
    assert solver.check() == z3.sat   # and it is indeed wrong: the tactic did not just give up on a true claim


def test_same_states_the_one_differing_pair_down_to_the_pieces() -> None:
    o, k, u = (z3.BitVec(n, 64) for n in "oku")
    assert extremum_taps._same(o + (k + 1), o + (u + 1), set()).eq(k == u)
    assert extremum_taps._same(o + (k + 1), o + (u + 1), {(k + 1).get_id()}).eq(k + 1 == u + 1)
    assert extremum_taps._same(o + k, u + k + o, set()).eq(o + k == u + k + o)   # not one pair apart


def _pairing_over(conditions: list[z3.BoolRef], hypothesis: z3.BoolRef) -> extremum_taps._Pairing:
    """A pairing with only its conditions and models (those of the hypothesis on each side of each condition)."""
    from semantics.properties.guarded_reads import models_of
    pairing = object.__new__(extremum_taps._Pairing)
    pairing.conditions, pairing.hypothesis = conditions, hypothesis
    pairing._signatures, pairing._values = {}, {}
    pairing.models = models_of(hypothesis, conditions)
    return pairing


def test_a_merged_tap_test_is_read_as_the_conjunction_of_its_two_or_three_conditions() -> None:
    a, b, c = z3.BitVecs("a b c", 8)
    inside = [z3.ULT(v, 4) for v in (a, b, c)]
    pairing = _pairing_over(inside, z3.BoolVal(True))
    for guard, wanted in ((z3.LShR(a | b, 2) == 0, z3.And(inside[:2])),          # nvcc's 2-D test
                          (z3.LShR(a | b | c, 2) == 0, z3.And(inside))):        # and its 3-D one
        found = pairing.condition(guard)
        solver = z3.Solver()
        solver.add(found != wanted)
        assert found is not None and solver.check() == z3.unsat
    assert pairing.condition(z3.LShR(a | b | c, 3) == 0) is None   # a wider window: no conjunction agrees
