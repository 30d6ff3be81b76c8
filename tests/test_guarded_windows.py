"""Padded windows (pooling and convolution taps skipped outside the input): the conditional accumulation
rewritten as a sum of guarded terms (`guarded_sums`), the reference's small window unrolled by the kernel's
`unroll`, the lane proved read by read (`guarded_reads`), and the nested-division guess of `divisions`.
Each returns a theorem about exactly its inputs, or nothing when its inputs do not match."""

from __future__ import annotations

import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import sum_over
from semantics.proof.rules import by_smt
from semantics.properties import compose, divisions, guarded_reads, guarded_sums

CHECK = Z3Checker()
X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
T = z3.BitVec("tid.x", 32)
HYP = z3.ULT(T, 256)
TAPS = 4


def record(*_args) -> None:
    pass


def at(k: int) -> z3.BitVecRef:
    """The kernel's tap k of output T (padding 1): a 32-bit offset, read back as a 64-bit index."""
    return z3.SignExt(32, T - 1 + k)


def inside(k: int) -> z3.BoolRef:
    return z3.ULT(T - 1 + k, 256)


def kernel_chain(offset: int = 1) -> z3.ArithRef:
    """`acc = 0; for k: if (inside) acc = acc + x[at]`, unrolled: a chain If(¬inside, acc, acc + x)."""
    acc = z3.RealVal(0)
    for k in range(TAPS):
        acc = z3.If(z3.Not(z3.ULT(T - offset + k, 256)), acc, acc + X(z3.SignExt(32, T - offset + k)))
    return acc


def reference() -> z3.ArithRef:
    w = z3.BitVec("w", 64)
    tap = z3.ZeroExt(32, T) + w - 1
    return sum_over(0, TAPS, w, z3.If(z3.ULT(tap, 256), X(tap), z3.RealVal(0)))


def test_a_conditional_accumulation_becomes_a_sum_of_guarded_terms_with_its_equation() -> None:
    chain = kernel_chain()
    kernel, ref, steps = guarded_sums.rewrite(chain, reference(), HYP, CHECK, 10.0, record)
    assert z3.is_add(kernel) and not z3.is_app_of(kernel, z3.Z3_OP_ITE)
    assert len(steps) == 2          # the pulled guards, the unrolled window
    pulled, unrolled = steps
    assert pulled.equation.conclusion.eq(z3.Implies(HYP, steps[1].kernel == chain))
    assert "Sum" not in str(ref)
    assert unrolled.equation.rule == "unroll"


def test_a_window_past_the_unroll_limit_or_with_symbolic_bounds_stays_a_sum() -> None:
    w, n = z3.BitVec("w", 64), z3.BitVec("n", 64)
    long = sum_over(0, guarded_sums.MAX_WINDOW + 1, w, X(w))
    symbolic = sum_over(0, n, w, X(w))
    for window in (long, symbolic):
        _, ref, steps = guarded_sums.rewrite(X(z3.BitVecVal(0, 64)), window, HYP, CHECK, 10.0, record)
        assert ref.eq(window) and not steps


def test_a_kernel_value_that_reads_a_comprehension_keeps_the_reference_window() -> None:
    w = z3.BitVec("w", 64)
    kernel = sum_over(0, 8, w, X(w))
    _, ref, steps = guarded_sums.rewrite(kernel, reference(), HYP, CHECK, 10.0, record)
    assert ref.eq(reference()) and not steps


def test_the_lane_is_proved_read_by_read_and_closes_to_its_goal() -> None:
    chain, ref = kernel_chain(), reference()
    kernel, unrolled, steps = guarded_sums.rewrite(chain, ref, HYP, CHECK, 10.0, record)
    claim = compose.comparison(HYP, kernel, unrolled)
    theorem = guarded_reads.prove(claim, kernel, unrolled, HYP, CHECK, 10.0, "lane", record)
    assert theorem is not None and theorem.conclusion.eq(claim)
    closed = compose.close(theorem, HYP, steps)
    assert closed is not None and closed.conclusion.eq(compose.comparison(HYP, chain, ref))


def test_a_window_shifted_by_one_tap_gives_no_theorem() -> None:
    chain, ref = kernel_chain(offset=0), reference()   # the bug: padding 0 where the reference pads 1
    kernel, unrolled, _ = guarded_sums.rewrite(chain, ref, HYP, CHECK, 10.0, record)
    claim = compose.comparison(HYP, kernel, unrolled)
    assert guarded_reads.prove(claim, kernel, unrolled, HYP, CHECK, 10.0, "lane", record) is None
    assert CHECK.check(_negated(claim), 10.0).status == "refuted"


def _negated(claim: z3.BoolRef):
    from lean_pool.checker import Obligation
    return Obligation("negated", "equivalence", z3.Not(claim), {})


WEIGHT = z3.Function("w", z3.BitVecSort(64), z3.RealSort())


def _weighted(chain: z3.ArithRef, tap_weight) -> z3.ArithRef:
    """A convolution's taps: each read x[at] of a chain times its tap's weight w[k]."""
    for k in range(TAPS):
        chain = z3.substitute(chain, (X(z3.SignExt(32, T - 1 + k)), X(z3.SignExt(32, T - 1 + k)) * tap_weight(k)))
    return chain


def test_taps_that_are_products_of_reads_are_paired_read_by_read() -> None:
    """x[at]·w[k] per tap (a convolution): each read of each product is paired, and the last step, over the
    taps' tests and reads as atoms, gives exactly the claim; with the weights of two taps swapped, nothing."""
    w = z3.BitVec("w", 64)
    tap = z3.ZeroExt(32, T) + w - 1
    ref = sum_over(0, TAPS, w, z3.If(z3.ULT(tap, 256), X(tap) * WEIGHT(w), z3.RealVal(0)))
    for weights, holds in ((lambda k: WEIGHT(z3.BitVecVal(k, 64)), True),
                           (lambda k: WEIGHT(z3.BitVecVal({0: 1, 1: 0}.get(k, k), 64)), False)):
        kernel, unrolled, _ = guarded_sums.rewrite(_weighted(kernel_chain(), weights), ref, HYP, CHECK, 10.0, record)
        claim = compose.comparison(HYP, kernel, unrolled)
        assert len(guarded_reads.pairing(kernel, unrolled, HYP) or ()) == (2 * TAPS if holds else 0)
        theorem = guarded_reads.prove(claim, kernel, unrolled, HYP, CHECK, 10.0, "lane", record)
        assert (theorem is not None and theorem.conclusion.eq(claim)) if holds else theorem is None


def test_reads_paired_by_models_need_one_partner_each() -> None:
    one = z3.If(inside(0), X(at(0)), z3.RealVal(0))
    assert guarded_reads.pairing(one + one, one, HYP) is None        # two reads against one
    assert guarded_reads.pairing(one, one, HYP) is None               # a single read: the plain query is small


def test_a_batch_index_divides_through_the_kernels_row_quotient() -> None:
    e = z3.BitVec("e", 64)
    row = z3.UDiv(e, 65537)                      # the kernel's e / L
    guesses = divisions.through_quotients(row + 1, e, 65537 * 128)   # the reference's e / (C·L)
    assert any(q.eq(z3.UDiv(row, 128)) for q, _ in guesses)
    for q, r in guesses:
        theorem = by_smt(z3.Implies(z3.ULT(e, 1 << 30), divisions.defines(e, 65537 * 128, q, r)), CHECK, 30.0,
                         "split", "equivalence")
        assert theorem.conclusion.arg(1).eq(divisions.defines(e, 65537 * 128, q, r))
