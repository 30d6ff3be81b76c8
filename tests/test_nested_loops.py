"""Nested loops (issue 15, item 1): an inner loop is summarised inside its outer loop's generic run and real
pass, an outer accumulator stepping by the inner Sum becomes a Sum of Sums, accesses in the inner loop carry
both iterations, and what is not modelled (barriers in a nest, an inner exit not proved) stays Unsupported.
The end-to-end cases are examples/nested_* (run by tests/test_examples.py)."""

from __future__ import annotations

import pytest
import z3

from lean_pool.checker import Z3Checker
from orchestrator.provers import bounds, reindex
from semantics.comprehension import SUM, body_at, sum_over
from semantics.errors import Unsupported
from semantics.properties import memory_safety, nested_sums, termination
from semantics.properties.reductions import Matcher
from semantics.ptx.accumulators import classify
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx
from semantics.ptx.symexec import Executor

ROWS, COLS, THREADS = 6, 10, 32
# y[t] = Σ_{i < ROWS} Σ_{j < COLS} x[t·ROWS·COLS + i·COLS + j], one thread per t; BODY marks the inner loop's body
NEST = f""".version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 t_param_0, .param .u64 t_param_1)
{{
.reg .pred %p<3>; .reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b64 %rd<9>;
ld.param.u64 %rd1, [t_param_0];
ld.param.u64 %rd2, [t_param_1];
cvta.to.global.u64 %rd3, %rd1;
cvta.to.global.u64 %rd4, %rd2;
mov.u32 %r1, %tid.x;
mov.f32 %f1, 0f00000000;
mov.u32 %r2, 0;
$L_outer:
mov.u32 %r3, 0;
$L_inner:
mul.lo.s32 %r4, %r2, {COLS};
add.s32 %r4, %r4, %r3;
mad.lo.s32 %r5, %r1, {ROWS * COLS}, %r4;
mul.wide.s32 %rd5, %r5, 4;
add.s64 %rd6, %rd3, %rd5;
ld.global.f32 %f2, [%rd6];
add.f32 %f1, %f1, %f2;
BODY
add.s32 %r3, %r3, 1;
setp.lt.s32 %p1, %r3, {COLS};
@%p1 bra $L_inner;
add.s32 %r2, %r2, 1;
setp.lt.s32 %p2, %r2, {ROWS};
@%p2 bra $L_outer;
mul.wide.u32 %rd7, %r1, 4;
add.s64 %rd8, %rd4, %rd7;
st.global.f32 [%rd8], %f1;
ret;
}}
"""
LAUNCH = Launch((1, 1, 1), (THREADS, 1, 1))
CHECKER = Z3Checker()


def _run(text: str = NEST, x_elements: int = THREADS * ROWS * COLS, oracle: bool = True):
    kernel = parse_ptx(text.replace("BODY", "")).kernels["t"]
    x = Buffer("x", "float32", x_elements, 4, "input")
    y = Buffer("y", "float32", THREADS, 4, "output")
    ctx = bind(kernel, LAUNCH, [x, y], {"x": x, "y": y})

    def exit_oracle(loop, key):
        return termination.exact_exit(loop, key, bounds.candidates, ctx.thread, LAUNCH, CHECKER, 10,
                                      lambda *_: None, {})

    executor = Executor(kernel, ctx, exit_oracle if oracle else None)
    return ctx, executor, executor.run()


def _holds(formula: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(formula))
    return solver.check() == z3.unsat


def test_the_outer_accumulator_is_a_sum_of_sums_over_both_ranges():
    ctx, _, _ = _run()
    (store,) = [a for a in ctx.accesses if a.kind == "store"]
    value = z3.simplify(store.values[0])
    assert z3.is_app(value) and value.decl() == SUM
    assert z3.simplify(value.arg(1)).as_long() == ROWS
    i, j = z3.BitVec("i", 64), z3.BitVec("j", 64)
    inner = z3.simplify(z3.substitute_vars(value.arg(2).body(), i))
    assert inner.decl() == SUM and z3.simplify(inner.arg(1)).as_long() == COLS
    read = z3.substitute_vars(inner.arg(2).body(), j)
    assert read.decl().name() == "x"
    tid = ctx.thread.tid[0]
    expected = z3.ZeroExt(32, tid) * (ROWS * COLS) + i * COLS + j
    assert _holds(z3.Implies(z3.And(z3.ULT(i, ROWS), z3.ULT(j, COLS), z3.ULT(tid, THREADS)),
                             read.arg(0) == expected))


def test_a_load_in_the_inner_loop_carries_both_iterations_and_only_recorded_loops_are_checked():
    ctx, executor, effects = _run()
    (load,) = [a for a in ctx.accesses if a.kind == "load"]
    assert [loop.line for loop, _ in load.loops] == sorted(loop.line for loop, _ in load.loops)
    assert len(load.loops) == 2 and load.loops[0][0] is not load.loops[1][0]
    assert len(effects.loops) == 2              # the outer loop and the inner loop of its real pass
    assert len(executor.generic_loops) == 1     # the inner loop of the outer generic run: nothing recorded
    assert all(loop.exit is not None for loop in effects.loops if loop.line == load.loops[1][0].line)


@pytest.mark.parametrize("missing, violated", [(0, False), (1, True)])
def test_inner_loop_accesses_are_bounds_checked_at_every_iteration_of_both_loops(missing, violated):
    ctx, _, effects = _run(x_elements=THREADS * ROWS * COLS - missing)
    result, proved = termination.check(effects.loops, bounds.candidates, ctx.thread, LAUNCH, CHECKER, 10,
                                       lambda *_: None, {})
    effects.resolve_loops(proved)
    x = ctx.buffers["x"]
    loads = [a for a in ctx.accesses if a.kind == "load"]
    outcome = memory_safety.check(loads, {"x": x}, ctx.thread, ctx.thread.in_launch(LAUNCH), CHECKER, 10,
                                  lambda *_: None)
    assert result.state == "proved"
    assert (outcome.state == "violated") == violated
    if violated:   # only the last thread's last element is past the end
        (finding,) = outcome.findings
        (outer, _), (inner, _) = loads[0].loops
        assert finding.witness["thread"][0] == THREADS - 1
        assert finding.witness[f"iteration@line{outer.line}"] == ROWS - 1
        assert finding.witness[f"iteration@line{inner.line}"] == COLS - 1


def test_a_barrier_in_a_loop_nest_is_unsupported():
    with pytest.raises(Unsupported, match="barrier in a loop nest"):
        _run(NEST.replace("BODY", "bar.sync 0;"))


def test_an_inner_loop_without_a_proved_exit_is_unsupported():
    with pytest.raises(Unsupported, match="nested loop whose exact exit iteration is not proved"):
        _run(oracle=False)


def test_a_guarded_step_is_a_sum_of_selections_and_a_condition_on_the_accumulator_is_not():
    h, t = z3.Reals("h t")
    c = z3.Bool("c")
    acc = classify(h, z3.If(c, h + t, h))
    assert acc is not None and acc.kind == "sum" and _holds(acc.step == z3.If(c, t, 0))
    two = classify(h, z3.If(c, h + t, h) + 2 * t)
    assert two is not None and two.kind == "sum" and _holds(two.step == z3.If(c, t, 0) + 2 * t)
    assert classify(h, z3.If(h > 0, h + t, h)) is None
    # guarded steps in a row, as a join builds them: each stays its own term
    u = z3.Real("u")
    d = z3.Bool("d")
    first = z3.If(c, h + t, h)
    row = classify(h, z3.If(d, first, first + u))
    assert row is not None and _holds(row.step == z3.If(c, t, 0) + z3.If(d, 0, u))
    assert z3.is_add(row.step) and row.step.num_args() == 2


def test_a_comprehension_body_simplified_to_a_constant_array_is_still_read():
    j = z3.BitVec("j", 64)
    constant = z3.simplify(z3.Lambda([j], z3.RealVal(0)))
    assert not z3.is_quantifier(constant)
    assert z3.simplify(body_at(constant, z3.BitVecVal(3, 64))).eq(z3.RealVal(0))
    assert z3.simplify(body_at(z3.Lambda([j], z3.ToReal(z3.BV2Int(j))), z3.BitVecVal(3, 64))).eq(z3.RealVal(3))


def _matcher() -> Matcher:
    return Matcher(z3.BoolVal(True), reindex.propose, CHECKER, 10, lambda *_: None, {}, "test")


@pytest.mark.parametrize("cols, equal", [(80, True), (79, False)])
def test_a_nested_kernel_sum_meets_a_flat_reference_sum_only_when_the_terms_agree(cols, equal):
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    i, j, m = z3.BitVecs("i j m", 64)
    kernel = sum_over(0, 48, i, sum_over(0, cols, j, x(80 * i + j)))
    reference = sum_over(0, 48 * 80, m, x(m))
    k2, r2 = nested_sums.rewrite(_matcher(), kernel, reference)
    assert (z3.is_const(k2) and k2.eq(r2)) == equal


def test_a_nested_kernel_sum_meets_a_nested_reference_sum_by_its_outer_index():
    x = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
    i, j, q, r = z3.BitVecs("i j q r", 64)
    kernel = sum_over(0, 48, i, sum_over(0, 20, j, x(80 * i + 4 * j) + x(80 * i + 4 * j + 1) + x(80 * i + 4 * j + 2)
                                         + x(80 * i + 4 * j + 3)))
    reference = sum_over(0, 48, q, sum_over(0, 80, r, x(80 * q + r)))
    k2, r2 = nested_sums.rewrite(_matcher(), kernel, reference)
    assert z3.is_const(k2) and k2.eq(r2)


@pytest.mark.parametrize("weight_tap, equal", [(lambda k: k, True), (lambda k: 2 - k, False)])
def test_an_unrolled_inner_window_meets_the_references_window_sum_by_congruence(weight_tap, equal):
    """A fused depthwise-separable convolution (KernelBench 86): Σ_c pw[c]·(a 3-tap window unrolled, taps past
    the row skipped) against Σ_c pw[c]·Σ_k (guarded x·w); met by congruence over c only when the kernel's
    weights are the reference's (flipped taps: no symbol)."""
    x, w, pw = (z3.Function(n, z3.BitVecSort(64), z3.RealSort()) for n in ("x", "w", "pw"))
    t = z3.BitVec("tid.x", 64)
    c, k, q = z3.BitVecs("c k q", 64)
    window = z3.RealVal(0)
    for tap in range(3):
        at = t + tap
        window = z3.If(z3.ULT(at, 64), window + x(64 * c + at) * w(3 * c + weight_tap(tap)), window)
    kernel = sum_over(0, 8, c, pw(c) * window)
    inner = sum_over(0, 3, k, z3.If(z3.ULT(t + k, 64), x(64 * q + t + k) * w(3 * q + k), z3.RealVal(0)))
    reference = sum_over(0, 8, q, pw(q) * inner)
    matcher = Matcher(z3.ULT(t, 64), reindex.propose, CHECKER, 10, lambda *_: None, {}, "test")
    assert nested_sums.rewrite(matcher, kernel, reference)[0].eq(kernel)     # not among the usual pairings
    k2, r2 = nested_sums.rewrite(matcher, kernel, reference, unrolled=True)   # the matcher's last resort
    assert (z3.is_const(k2) and k2.eq(r2)) == equal
    if equal:      # and the step that names both sides carries its theorem, undone by kernel rules
        assert matcher.steps and all(step.equation is not None for step in matcher.steps)


ROUND_TRIP = """.version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 t_param_0)
{
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [t_param_0];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
$L_loop:
cvt.s64.s32 %rd3, %r1;
mul.wide.s32 %rd4, %r1, 4;
add.s64 %rd5, %rd2, %rd4;
st.global.f32 [%rd5], 0f3F800000;
cvt.u32.u64 %r2, %rd3;
add.s32 %r1, %r2, 32;
setp.lt.s32 %p1, %r2, 992;
@%p1 bra $L_loop;
ret;
}
"""


def test_a_counter_through_a_wider_register_and_back_is_an_induction_variable():
    """KernelBench 97's outer loop: i → cvt.s64.s32 → cvt.u32.u64 → + 32 steps by 32 (the round trip folds
    only with sign extensions eliminated); each store then lies at tid + 32·k."""
    kernel = parse_ptx(ROUND_TRIP).kernels["t"]
    y = Buffer("y", "float32", 1024, 4, "output")
    ctx = bind(kernel, LAUNCH, [y], {"y": y})
    assert len(Executor(kernel, ctx).run().loops) == 1
    (store,) = [a for a in ctx.accesses if a.kind == "store"]
    k = store.loops[0][1]
    inside = z3.And(ctx.thread.in_launch(LAUNCH), z3.ULT(k, 32))
    assert _holds(z3.Implies(inside, store.offset == 4 * (z3.ZeroExt(32, ctx.thread.tid[0]) + 32 * k)))


def test_a_step_whose_partial_sums_are_shared_by_both_branches_is_found_once_per_subterm(monkeypatch):
    """If(c_k, v + a_k, v + b_k) over the same v, 12 levels deep: walked as a tree that is 2^12 visits; each
    subterm's step is found once."""
    from semantics.ptx import accumulators

    calls = []
    once = accumulators._sum_step_once
    monkeypatch.setattr(accumulators, "_sum_step_once", lambda *args: calls.append(1) or once(*args))
    header = z3.Real("acc")
    value = header
    for k in range(12):
        value = z3.If(z3.Bool(f"c{k}"), value + z3.Real(f"a{k}"), value + z3.Real(f"b{k}"))
    found = accumulators.classify(header, value)
    assert found is not None and found.kind == "sum"
    assert len(calls) <= 4 * 12 + 2
