"""cumprod end to end: the product accumulator, the prefix split for products, the guards that keep sum-only
algebra away from Prod, replay of products, and small PTX kernels verified or refuted against torch.cumprod."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
import z3

from lean_pool.checker import Z3Checker
from orchestrator.job import run_verify
from orchestrator.provers.reindex import propose
from semantics.comprehension import PROD, SUM, prod_over, sum_over
from semantics.properties import padded_tiles, padding, prefix
from semantics.properties.reductions import Matcher
from semantics.ptx.accumulators import at_iteration, classify
from semantics.replay import Evaluator, differ

INDEX = z3.BitVecSort(64)
X = z3.Function("x", INDEX, z3.RealSort())
K = z3.BitVec("k", 64)
ROW = z3.BitVec("row", 64)
HYP = z3.And(z3.ULT(K, 1000), z3.ULT(ROW, 128))
COLS = 4000


def _valid(claim: z3.BoolRef, hyp: z3.BoolRef = HYP) -> bool:
    solver = z3.Solver()
    solver.set("timeout", 20000)
    solver.add(hyp, z3.Not(claim))
    return solver.check() == z3.unsat


# ---- the accumulator ------------------------------------------------------------------------------------

ACC = z3.Real("acc")
A, B = z3.Real("a"), z3.Real("b")


def test_a_multiplied_register_is_a_product_accumulator():
    acc = classify(ACC, ACC * A)
    assert acc is not None and acc.kind == "prod" and z3.eq(acc.step, A)
    unrolled = classify(ACC, z3.simplify(((ACC * A) * B) * X(K)))   # nvcc's unroll: one factor per element
    assert unrolled is not None and unrolled.kind == "prod"
    assert _valid(unrolled.header * unrolled.step == unrolled.next_value, z3.BoolVal(True))
    negated = classify(ACC, z3.simplify(-(ACC * A)))                # -1 is a factor of the step, not lost
    assert negated is not None and negated.kind == "prod"
    assert _valid(negated.step == -A, z3.BoolVal(True))


@pytest.mark.parametrize("next_value", [ACC * ACC, ACC * A + 1, ACC * (A + ACC), ACC / A + ACC * A * ACC],
                         ids=["square", "affine", "step_reads_acc", "mixed"])
def test_other_updates_are_not_products(next_value):
    acc = classify(ACC, z3.simplify(next_value))
    assert acc is None or acc.kind != "prod"


def test_the_summary_is_the_start_times_the_product():
    acc = classify(ACC, ACC * X(ROW * COLS + K))
    j = z3.BitVec("j", 64)
    two = at_iteration(acc, z3.RealVal(2), K, acc.step, K, j)
    assert two.decl().kind() == z3.Z3_OP_MUL and any(c.decl() == PROD for c in two.children())
    solver = z3.Solver()
    solver.add(K == 3, ROW == 1)
    assert solver.check() == z3.sat
    ev = Evaluator(solver.model(), {("x", COLS + i): Fraction(i + 2) for i in range(3)})
    assert ev.value(two) == 2 * 2 * 3 * 4                      # 2 · x0 · x1 · x2
    assert ev.value(at_iteration(acc, z3.RealVal(2), z3.BitVecVal(0, 64), acc.step, K, j)) == 2   # empty: 1


# ---- the prefix split for products -----------------------------------------------------------------------

def splitter(log=None) -> prefix.PrefixSplitter:
    def record(ob, outcome):
        if log is not None:
            log.append((ob, outcome))
    return prefix.splitter(HYP, "t", Z3Checker(), 30.0, record)


def running(groups: int, tail: int, start: z3.ArithRef | int = 1) -> z3.ArithRef:
    """What the unrolled product kernel stores at iteration k: groups of 4 so far, then `tail` of group k."""
    j = z3.BitVec("j", 64)
    whole = prod_over(0, K, j, math.prod([X(ROW * COLS + groups * j + i) for i in range(groups)]))
    return z3.simplify(start * whole * math.prod([X(ROW * COLS + groups * K + t) for t in range(tail)]))


def cumprod(count: z3.BitVecRef) -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return prod_over(0, count, m, X(ROW * COLS + m))


def test_inclusive_running_product_matches_the_prefix():
    log = []
    kernel, reference = splitter(log).rewrite(running(4, 2), cumprod(4 * K + 2))
    assert not any(z3.is_app(t) and t.decl() in (PROD, SUM) for t in (kernel, reference))
    assert _valid(kernel == reference)
    assert any("running product" in ob.name and "4·K + 2 elements" in ob.name for ob, _ in log)


@pytest.mark.parametrize(("tail", "start"), [(1, 1), (2, 2), (2, 0)], ids=["exclusive", "starts_at_2", "starts_at_0"])
def test_wrong_running_product_leaves_a_difference(tail, start):
    kernel, reference = splitter().rewrite(running(4, tail, start), cumprod(4 * K + 2))
    assert not _valid(kernel == reference)


def test_wrong_group_is_not_split():
    j = z3.BitVec("j", 64)
    skipped = prod_over(0, K, j, math.prod([X(ROW * COLS + 4 * j + i) for i in (0, 1, 2, 2)]))
    kernel, reference = splitter().rewrite(skipped, cumprod(4 * K))
    assert kernel.decl() == PROD and reference.decl() == PROD


def test_a_running_sum_is_not_split_against_a_prefix_product():
    j = z3.BitVec("j", 64)
    summed = sum_over(0, K, j, sum(X(ROW * COLS + 4 * j + i) for i in range(4)))
    kernel, reference = splitter().rewrite(summed, cumprod(4 * K))
    assert kernel.decl() == SUM and reference.decl() == PROD


def test_the_product_identity_holds_on_numbers():
    """Π_{m<4k+p} x_m = Π_{j<k} Π_{i<4} x_{4j+i} · tail, expanded at k = 5; one element more differs."""
    rng = random.Random(1)
    solver = z3.Solver()
    solver.add(K == 5, ROW == 3)
    assert solver.check() == z3.sat
    for p in range(4):
        overrides = {("x", 3 * COLS + i): Fraction(rng.choice([-1, 1]) * rng.randint(2, 9), rng.randint(1, 9))
                     for i in range(40)}
        ev = Evaluator(solver.model(), overrides)
        assert not differ(ev.value(running(4, p)), ev.value(cumprod(4 * K + p)))
        assert differ(ev.value(running(4, p)), ev.value(cumprod(4 * K + p + 1)))


# ---- sum-only algebra leaves products alone --------------------------------------------------------------

def test_the_general_matcher_does_not_match_products():
    """Equal products over one domain: the matcher's theorems are stated for sums and maxima, so it must not
    name them (a proof then needs the prefix split, or none)."""
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    kernel = prod_over(0, COLS, j, X(ROW * COLS + j))
    reference = prod_over(0, COLS, m, X(ROW * COLS + m))
    matcher = Matcher(HYP, propose, Z3Checker(), 30.0, lambda ob, outcome: None, {}, "t")
    k2, r2 = matcher.rewrite(kernel, reference)
    assert k2.decl() == PROD and r2.decl() == PROD


def test_zero_tails_are_not_cut_from_products():
    """Prod(0, n, If(j < 100, x_j, 0)) is 0, not Prod(0, 100, x): the masked-tail and padded-tile cuts are
    for sums only."""
    j = z3.BitVec("j", 64)
    padded = prod_over(0, 128, j, z3.If(z3.UGE(j, 100), z3.RealVal(0), X(ROW * COLS + j)))
    record = lambda ob, outcome: None  # noqa: E731
    assert padding.rewrite(padded, HYP, Z3Checker(), 30.0, record)[0].eq(padded)
    cutter = padded_tiles.TileCutter(HYP, "t", Z3Checker(), 30.0, record)
    kernel, _ = cutter.rewrite(padded, prod_over(0, 100, j, X(ROW * COLS + j)))
    assert kernel.eq(padded)


# ---- replay --------------------------------------------------------------------------------------------

def test_sparse_replay_of_a_long_product():
    """A row of 4000 elements, three with values of their own and the rest -1: one power, no enumeration."""
    m = z3.BitVec("m", 64)
    row_product = prod_over(0, COLS, m, X(ROW * COLS + m))
    solver = z3.Solver()
    solver.add(ROW == 7)
    assert solver.check() == z3.sat
    overrides = {("x", None): Fraction(-1), ("x", 7 * COLS + 5): Fraction(3), ("x", 7 * COLS + 6): Fraction(1, 2),
                 ("x", 7 * COLS + 3999): Fraction(-2)}
    ev = Evaluator(solver.model(), overrides)
    assert ev.value(row_product) == mpmath.mpf(3) * mpmath.mpf(0.5) * -2 * (-1) ** (COLS - 3)
    assert ev.value(prod_over(5, 5, m, X(ROW * COLS + m))) == 1


# ---- kernels: a running product in PTX against torch.cumprod ----------------------------------------------

PTX = """.version 8.0
.target sm_90
.address_size 64

.visible .entry cumprod_row(.param .u64 x_ptr, .param .u64 y_ptr, .param .u32 rows, .param .u32 cols)
{
    .reg .pred %p<3>;
    .reg .f32 %f<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [y_ptr];
    ld.param.u32 %r1, [rows];
    ld.param.u32 %r2, [cols];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r3, %tid.x;
    setp.ge.s32 %p1, %r3, %r1;
    @%p1 bra $DONE;
    mul.lo.s32 %r4, %r3, %r2;
    mul.wide.s32 %rd5, %r4, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    mov.f32 %f1, INIT;
    mov.u32 %r5, 0;
$LOOP:
    ld.global.f32 %f2, [%rd6];
    mul.rn.f32 %f1, %f1, %f2;
    st.global.f32 [%rd7], %f1;
    add.s64 %rd6, %rd6, 4;
    add.s64 %rd7, %rd7, 4;
    add.s32 %r5, %r5, 1;
    setp.lt.s32 %p2, %r5, %r2;
    @%p2 bra $LOOP;
$DONE:
    ret;
}
"""

REF = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)


def get_inputs():
    return [torch.rand(8, 100)]


def get_init_inputs():
    return []
"""

MANIFEST = """name = "{name}"

[kernel]
source = "kernel.ptx"
entry = "cumprod_row"

[launch]
grid = [1, 1, 1]
block = [8, 1, 1]
args = ["x", "y", 8, 100]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""


def _task(root: Path, name: str, init: str) -> Path:
    root.mkdir()
    (root / "kernel.ptx").write_text(PTX.replace("INIT", init))
    (root / "ref.py").write_text(REF)
    (root / "lark.toml").write_text(MANIFEST.format(name=name))
    return root / "lark.toml"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LARK_CACHE_DIR", str(tmp_path / "cache"))


def test_running_product_from_one_verifies(tmp_path, cache):
    result = run_verify(_task(tmp_path / "one", "one", "0f3F800000"), 300.0)
    assert result.verdict == "verified", result.to_json()


@pytest.mark.parametrize(("init", "factor"), [("0f40000000", 2), ("0f00000000", 0)], ids=["two", "zero"])
def test_running_product_from_a_wrong_start_is_refuted(tmp_path, cache, init, factor):
    """acc starting at 2 (or 0) stores 2 (or 0) times the prefix product: refuted, with a witness whose two
    values are finite floats in exactly that ratio."""
    result = run_verify(_task(tmp_path / "wrong", "wrong", init), 300.0)
    assert result.verdict == "refuted", result.to_json()
    (finding,) = result.findings
    w = finding["witness"]
    assert finding["property"] == "equivalence" and math.isfinite(w["reference_value"])
    assert w["kernel_value"] == factor * w["reference_value"] != w["reference_value"]
