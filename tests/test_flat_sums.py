"""The reference's nest of Sums flattened (semantics/properties/flat_sums.py): a nest over adjacent dims becomes
one Sum at a plain index, a nest over dims with others between them (a batch norm's N and H·W) one Sum at a
position decoded by division, each with a kernel theorem ⊢ h → flat = nest that `compose.close` undoes; a nest
whose position cannot be read (a small inner range whose strides do not compose) and a lane whose kernel keeps
a loop nest are left as they are. Every rewrite is checked here against the nest with every Sum expanded (an
independent check of its value, small ranges), and a wrong kernel's lane stays false after the rewrite.
End to end: examples/kernelbench_l1/3[3-9]_*, 40_* and the twin 34_instancenorm2d_unbiased_variance."""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Obligation, Z3Checker
from semantics.comprehension import SUM, body_at, sum_over
from semantics.proof.rules import mp
from semantics.properties import compose
from semantics.properties.flat_sums import MIN_DECODED, SumFlattener
from semantics.properties.matched_sums import reindex_sum
from semantics.terms import mentions, outside_binders

X = z3.Function("X", z3.BitVecSort(64), z3.RealSort())
C = z3.BitVec("c", 64)                    # the storing thread's channel
CHANNELS = 3
HYPOTHESIS = z3.ULT(C, CHANNELS)
A, B, D, M = z3.BitVecs("a b d m", 64)


def _nest(rows: int, cols: int, at) -> z3.ArithRef:
    """Σ_{a<rows} Σ_{b<cols} X(at(a, b))."""
    return sum_over(0, rows, A, sum_over(0, cols, B, X(at(A, B))))


def _flatten(kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[SumFlattener, z3.ExprRef, z3.ExprRef]:
    log: list = []
    flattener = SumFlattener(HYPOTHESIS, "test", Z3Checker(), 10.0, lambda ob, out: log.append((ob, out)))
    new_kernel, new_reference = flattener.rewrite(kernel, reference)
    return flattener, new_kernel, new_reference


def _expanded(term: z3.ExprRef) -> z3.ExprRef:
    """`term` with every Sum written out term by term (numeral bounds), inner ones too."""
    if z3.is_app(term) and term.decl().eq(SUM):
        lo, hi = (z3.simplify(bound).as_long() for bound in term.children()[:2])
        terms = [_expanded(z3.simplify(body_at(term.arg(2), z3.BitVecVal(i, 64)))) for i in range(lo, hi)]
        return z3.Sum(terms) if terms else z3.RealVal(0)
    if z3.is_app(term) and term.num_args():
        return term.decl()(*[_expanded(child) for child in term.children()])
    return term


def _valid(claim: z3.BoolRef) -> bool:
    ob = Obligation("test: claim", "test", z3.Not(claim))
    return Z3Checker().check(ob, 30.0).status == PROVED


def _same_value(a: z3.ExprRef, b: z3.ExprRef) -> bool:
    """a = b at every channel below CHANNELS, every Sum expanded: checked without the rewrite's own rules."""
    return _valid(z3.Implies(HYPOTHESIS, _expanded(a) == _expanded(b)))


def _sums(term: z3.ExprRef) -> list[z3.ExprRef]:
    return outside_binders(term, (SUM,))


def _is_flat(term: z3.ExprRef, size: int) -> bool:
    """`term` is one Sum over [0, size) whose body holds no Sum."""
    if not (z3.is_app(term) and term.decl().eq(SUM)):
        return False
    lo, hi = (z3.simplify(bound) for bound in term.children()[:2])
    inner = body_at(term.arg(2), M)
    return lo.as_long() == 0 and hi.as_long() == size and not _sums(inner)


def _closes(flattener: SumFlattener, kernel: z3.ExprRef, before: z3.ExprRef, after: z3.ExprRef) -> bool:
    """From ⊢ ¬(h ∧ kernel ≠ after) (the kernel's flat Sum and the rewritten reference's, term by term by
    `reindex_sum`), `compose.close` gives ⊢ ¬(h ∧ kernel ≠ before): the steps' equations are kernel theorems
    about exactly these terms."""
    checker = Z3Checker()
    j = z3.BitVec("j", 64)
    same = reindex_sum(after, kernel, (j, j), (j, j), checker, 10.0, HYPOTHESIS)
    claim = compose.comparison(HYPOTHESIS, kernel, after)
    theorem = mp(compose.by_arithmetic(z3.Implies(same.conclusion, claim), checker, 10.0, "test: the lane"), same)
    closed = compose.close(theorem, HYPOTHESIS, flattener.steps)
    return closed is not None and closed.conclusion.eq(compose.comparison(HYPOTHESIS, kernel, before))


# ------------------------------------------------------------------------------------------ adjacent dims

def test_a_nest_over_adjacent_dims_is_one_sum_at_a_plain_index_and_the_step_closes():
    rows, cols = 4, 8
    nest = _nest(rows, cols, lambda a, b: C * (rows * cols) + a * cols + b)
    kernel = sum_over(0, rows * cols, D, X(C * (rows * cols) + D))
    flattener, new_kernel, flat = _flatten(kernel, nest)
    assert new_kernel.eq(kernel)
    assert _is_flat(flat, rows * cols)
    assert _valid(body_at(flat.arg(2), M) == X(C * (rows * cols) + M))       # the plain index, nothing decoded
    assert _same_value(flat, nest)
    (step,) = flattener.steps
    assert step.equation is not None
    assert step.equation.conclusion.eq(z3.Implies(HYPOTHESIS, flat == nest))
    assert _closes(flattener, kernel, nest, flat)


def test_three_adjacent_dims_are_flattened_inside_out_into_one_sum():
    """A layer norm's (C, H, W): the inner (H, W) first at a fresh outer index, then (C, H·W)."""
    dims = (3, 4, 8)
    e = z3.BitVec("e", 64)
    size = dims[0] * dims[1] * dims[2]
    nest = sum_over(0, dims[0], e, _nest(dims[1], dims[2],
                                         lambda a, b: C * size + e * (dims[1] * dims[2]) + a * dims[2] + b))
    _, _, flat = _flatten(X(C), nest)
    assert _is_flat(flat, size)
    assert _valid(body_at(flat.arg(2), M) == X(C * size + M))
    assert _same_value(flat, nest)


def test_a_mean_inside_a_variance_is_flattened_in_both_places():
    """A norm's element (x - mean)·var with var = Σ (x - mean)² / n, mean = Σ x / n: the mean's nest first
    (inside the variance's body too), then the variance's, so no nest is left anywhere."""
    rows, cols = 2, 8
    n = rows * cols
    mean_nest = _nest(rows, cols, lambda a, b: C * n + a * cols + b)
    mean = mean_nest / n
    variance = sum_over(0, rows, A, sum_over(0, cols, B, (X(C * n + A * cols + B) - mean) ** 2)) / n
    element = (X(C * n) - mean) * variance
    _, _, flat = _flatten(X(C), element)
    sums = _sums(flat)
    assert len(sums) == 2 and not any(mentions(flat, s) for s in (mean_nest, _sums(variance)[0]))
    (flat_mean,) = [s for s in sums if _is_flat(s, n)]
    (flat_variance,) = [s for s in sums if not s.eq(flat_mean)]
    assert _is_flat(z3.substitute(flat_variance, (flat_mean, z3.RealVal(0))), n)
    assert mentions(flat_variance, flat_mean)
    assert _same_value(flat, element)


# ------------------------------------------------------------------------------ dims with others between

def test_a_nest_over_non_adjacent_dims_decodes_the_position_by_division():
    """A batch norm's channel c: Σ_{n<N} Σ_{s<HW} x[n, c, s], the channels between N and H·W. No plain index
    reads it; the flat Sum reads x at (m / HW, m % HW)."""
    batch, plane = 2, MIN_DECODED
    nest = _nest(batch, plane, lambda a, b: a * (CHANNELS * plane) + C * plane + b)
    kernel = sum_over(0, batch * plane, D, X(z3.UDiv(D, plane) * (CHANNELS * plane) + C * plane + z3.URem(D, plane)))
    flattener, _, flat = _flatten(kernel, nest)
    assert _is_flat(flat, batch * plane)
    assert not _valid(body_at(flat.arg(2), M) == X(C * (batch * plane) + M))
    assert _same_value(flat, nest)
    assert _closes(flattener, kernel, nest, flat)


def test_a_batch_norm_nest_joins_its_adjacent_inner_dims_before_decoding():
    """Σ_{n<N} Σ_{h<H} Σ_{w<W} x[n, c, h, w] with H below MIN_DECODED: (H, W) are adjacent and join first into
    one plane of H·W at a fresh n, which is then decoded; taken outside in, (N, H) would be a small inner range
    that does not compose, and the nest would stay."""
    batch, height, width = 2, 4, MIN_DECODED // 4
    plane = height * width
    n = z3.BitVec("n", 64)
    nest = sum_over(0, batch, n, _nest(height, width, lambda a, b: n * (CHANNELS * plane) + C * plane + a * width + b))
    flattener, _, flat = _flatten(X(C), nest)
    assert _is_flat(flat, batch * plane)
    assert _same_value(flat, nest)
    assert len(flattener.steps) == 1 and flattener.steps[0].equation is not None


def test_strides_that_do_not_compose_over_a_large_inner_range_are_decoded_not_joined():
    """Rows 40 apart, 32 read of each: the plain index m (as if the rows were adjacent) would read the gaps'
    elements; the flat Sum must decode."""
    rows, cols, stride = 2, MIN_DECODED, MIN_DECODED + 8
    nest = _nest(rows, cols, lambda a, b: a * stride + b)
    _, _, flat = _flatten(X(C), nest)
    assert _is_flat(flat, rows * cols)
    assert _same_value(flat, nest)


def test_a_small_inner_range_whose_strides_do_not_compose_is_left_as_a_nest():
    """A window's 5 taps 7 apart: no plain index reads it and the range is too small to be a reduced dim, so
    nothing is decoded; no step, the reference unchanged."""
    nest = _nest(4, 5, lambda a, b: C * 28 + a * 7 + b)
    flattener, _, reference = _flatten(X(C), nest)
    assert reference.eq(nest)
    assert flattener.steps == []


def test_non_adjacent_dims_over_a_small_inner_range_are_left_as_a_nest():
    nest = _nest(2, 8, lambda a, b: a * (CHANNELS * 8) + C * 8 + b)
    flattener, _, reference = _flatten(X(C), nest)
    assert reference.eq(nest)
    assert flattener.steps == []


def test_a_lane_whose_kernel_keeps_a_loop_nest_is_left_alone():
    """The kernel's own Sum of Sums is met by congruence (nested_sums), not by flattening the reference."""
    rows, cols = 4, 8
    nest = _nest(rows, cols, lambda a, b: C * (rows * cols) + a * cols + b)
    flattener, kernel, reference = _flatten(nest, nest)
    assert reference.eq(nest) and kernel.eq(nest)
    assert flattener.steps == []


# ---------------------------------------------------------------------------------------- wrong kernels

def test_a_wrong_kernel_stays_false_after_the_rewrite():
    """The unbiased variance's twin: the kernel's flat sum over n elements divided by n - 1 where the reference
    divides by n. The rewritten lane is false at some X (so it cannot be proved), and so is one that drops the
    last element or reads one row too far."""
    rows, cols = 4, 8
    n = rows * cols
    nest = _nest(rows, cols, lambda a, b: C * n + a * cols + b)
    wrong = [sum_over(0, n, D, X(C * n + D)) / (n - 1),
             sum_over(0, n - 1, D, X(C * n + D)) / n,
             sum_over(0, n, D, X(C * n + cols + D)) / n]
    for kernel in wrong:
        _, _, flat = _flatten(kernel, nest / n)
        (flat_sum,) = _sums(flat)
        assert _is_flat(flat_sum, n)
        assert not _valid(z3.Implies(HYPOTHESIS, _expanded(kernel) == _expanded(flat)))
