"""The -inf padding rules (`semantics.ptx.neginf`) against IEEE-754 arithmetic on Python floats.

Each rule rewrites an operation on If(c, v, -inf); at every concrete c, v and operand the rewritten term must
give what the hardware gives with a real -inf (Python floats are IEEE doubles; the samples are small dyadic
numbers, so no rounding enters). Whatever has no rule must be refused, naming -inf.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import z3

from lean_pool.checker import PROVED, UNKNOWN, Obligation, Outcome
from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.instructions import real_max, real_min
from semantics.ptx.neginf import NEG_INF
from semantics.replay import Evaluator, NotConcrete
from semantics.terms import larger_than
from semantics.verdict import FiniteOnly
from tests.ptx_helpers import run_alu
from tests.tiny_tasks import elementwise_task

REPO = Path(__file__).resolve().parents[1]
SAMPLES = [-2.5, -1.0, 0.0, 0.75, 3.0]
c, v, a = z3.Bool("c"), z3.Real("v"), z3.Real("a")
PADDED = z3.If(c, v, NEG_INF)


def concrete(term: z3.ExprRef, cv: bool, vv: float, av: float) -> float:
    """The IEEE value the rewritten term denotes at one point: the marker is -inf, everything else a real."""
    pairs = [(c, z3.BoolVal(cv)), (v, z3.RealVal(Fraction(vv))), (a, z3.RealVal(Fraction(av)))]
    t = z3.simplify(z3.substitute(term, *pairs))
    if z3.eq(t, NEG_INF):
        return -math.inf
    assert z3.is_rational_value(t), f"the rule left {t}: the marker under an operator"
    return float(t.as_fraction())


def ieee(cv: bool, vv: float) -> float:
    return vv if cv else -math.inf


BINARY_RULES = [
    # (opcode, real meaning, IEEE meaning, padded operand first?)
    ("sub", lambda x, y: x - y, lambda x, y: x - y, True),
    ("add", lambda x, y: x + y, lambda x, y: x + y, True),
    ("add", lambda x, y: x + y, lambda x, y: x + y, False),
    ("max", real_max, max, True),
    ("max", real_max, max, False),
    ("min", real_min, min, True),
    ("min", real_min, min, False),
]


@pytest.mark.parametrize("opcode,real_op,ieee_op,first", BINARY_RULES,
                         ids=[f"{r[0]}-{'padded-first' if r[3] else 'padded-second'}" for r in BINARY_RULES])
def test_binary_rule_agrees_with_ieee(opcode, real_op, ieee_op, first):
    term = neginf.binary(opcode, PADDED, a, real_op, "test") if first else \
        neginf.binary(opcode, a, PADDED, real_op, "test")
    for cv, vv, av in itertools.product([True, False], SAMPLES, SAMPLES):
        x = ieee(cv, vv)
        expected = ieee_op(x, av) if first else ieee_op(av, x)
        assert concrete(term, cv, vv, av) == expected, (opcode, cv, vv, av)


def test_max_keeps_a_max_tree_without_the_marker():
    term = neginf.binary("max", a, PADDED, real_max, "test")
    assert not neginf.mentions_neg_inf(term)          # max(-inf, a) = a: the padding drops out
    assert z3.is_app_of(term, z3.Z3_OP_ITE) and z3.is_app_of(term.arg(0), z3.Z3_OP_GE)


def test_max_of_two_padded_lanes():
    d, w = z3.Bool("d"), z3.Real("w")
    term = neginf.binary("max", PADDED, z3.If(d, w, NEG_INF), real_max, "test")
    for cv, dv, vv, wv in itertools.product([True, False], [True, False], SAMPLES, SAMPLES):
        pairs = [(c, z3.BoolVal(cv)), (d, z3.BoolVal(dv)), (v, z3.RealVal(Fraction(vv))),
                 (w, z3.RealVal(Fraction(wv)))]
        t = z3.simplify(z3.substitute(term, *pairs))
        got = -math.inf if z3.eq(t, NEG_INF) else float(t.as_fraction())
        assert got == max(ieee(cv, vv), ieee(dv, wv))


def test_mul_by_positive_constant_and_ex2():
    k = z3.RealVal(Fraction(3, 2))
    scaled = neginf.binary("mul", PADDED, k, lambda x, y: x * y, "test")
    power = neginf.unary("ex2", scaled, lambda x: 2 ** x, "test")
    for cv, vv in itertools.product([True, False], [-2.0, 0.0, 2.0]):
        assert concrete(scaled, cv, vv, 0.0) == ieee(cv, vv) * 1.5
        assert concrete(power, cv, vv, 0.0) == 2.0 ** (ieee(cv, vv) * 1.5)   # ex2(-inf) = +0
    assert not neginf.mentions_neg_inf(power)


@pytest.mark.parametrize("opcode,left,right", [
    ("sub", a, PADDED),                                 # a - (-inf) = +inf: not a real
    ("sub", PADDED, PADDED),                            # -inf - -inf = NaN
    ("add", PADDED, z3.If(z3.Bool("d"), a, NEG_INF)),   # both padded: stays unknown
    ("mul", PADDED, a),                                 # sign of the factor unknown
    ("mul", PADDED, z3.RealVal(-2)),                    # -inf · (-2) = +inf
    ("mul", PADDED, z3.RealVal(0)),                     # -inf · 0 = NaN
    ("div", a, PADDED),
    ("div", PADDED, a),
    ("min", PADDED, z3.If(z3.Bool("d"), a, NEG_INF)),
])
def test_operations_without_a_rule_are_refused(opcode, left, right):
    with pytest.raises(Unsupported, match="-inf"):
        neginf.binary(opcode, left, right, lambda x, y: x, "test")


@pytest.mark.parametrize("opcode", ["neg", "abs", "rcp", "sqrt", "lg2", "tanh"])
def test_unary_operations_other_than_ex2_are_refused(opcode):
    with pytest.raises(Unsupported, match="-inf"):
        neginf.unary(opcode, PADDED, lambda x: x, "test")


def test_marker_under_an_operator_is_refused():
    with pytest.raises(Unsupported, match="-inf"):
        neginf.split(NEG_INF + 1, "test")


# ---------------------------------------------------------------- through the instruction table

NEG_INF_F32 = "0fFF800000"


def test_padded_load_then_max_sub_ex2():
    """Triton's shape: the padded lane's -inf drops out of the max, and exp of it is 0."""
    state = run_alu(f"mov.f32 %f1, {NEG_INF_F32};\n@%p1 mov.f32 %f1, %f2;\nmax.f32 %f4, %f3, %f1;\n"
                    "sub.f32 %f5, %f1, %f4;\nmul.f32 %f6, %f5, 0f3FB8AA3B;\nex2.approx.f32 %f7, %f6;",
                    {"%p1": z3.Bool("p"), "%f2": z3.Real("x"), "%f3": z3.Real("y")})
    assert not neginf.mentions_neg_inf(state.regs["%f4"])
    assert not neginf.mentions_neg_inf(state.regs["%f7"])
    off = z3.simplify(z3.substitute(state.regs["%f7"], (z3.Bool("p"), z3.BoolVal(False))))
    assert z3.is_rational_value(off) and off.as_fraction() == 0


@pytest.mark.parametrize("ins", ["setp.lt.f32 %p2, %f1, %f3;", "div.full.f32 %f4, %f3, %f1;",
                                 "neg.f32 %f4, %f1;", "fma.rn.f32 %f4, %f1, %f3, %f3;",
                                 "max.sat.f32 %f4, %f1, %f3;", "cvt.f64.f32 %fd1, %f1;"])
def test_padded_value_in_unruled_instruction_is_refused(ins):
    with pytest.raises(Unsupported, match="-inf"):
        run_alu(f"mov.f32 %f1, {NEG_INF_F32};\n@%p1 mov.f32 %f1, %f2;\n{ins}",
                {"%p1": z3.Bool("p"), "%f2": z3.Real("x"), "%f3": z3.Real("y")})


def test_positive_infinity_stays_unsupported():
    with pytest.raises(Unsupported, match="non-finite"):
        run_alu("add.f32 %f2, %f1, 0f7F800000;", {"%f1": z3.Real("x")})


# ---------------------------------------------------------------- the wall in front of the solver


class _Counting:
    name = "counting"

    def __init__(self) -> None:
        self.asked = 0

    def check(self, obligation, timeout_s):
        self.asked += 1
        return Outcome(PROVED, self.name, 0.0)


def test_obligations_holding_the_marker_never_reach_a_solver():
    inner = _Counting()
    checker = FiniteOnly(inner)
    x = z3.Real("x")
    padded = checker.check(Obligation("o", "equivalence", z3.If(c, x, NEG_INF) > x), 1.0)
    assert padded.status == UNKNOWN and "-inf" in padded.reason and inner.asked == 0
    assert checker.check(Obligation("o", "equivalence", x > x), 1.0).status == PROVED and inner.asked == 1


def test_replay_refuses_the_marker():
    solver = z3.Solver()
    solver.add(z3.Real("x") == 1)
    assert solver.check() == z3.sat
    with pytest.raises(NotConcrete, match="-inf"):
        Evaluator(solver.model()).value(NEG_INF + z3.Real("x"))


def test_larger_than_stops_at_its_limit():
    x = z3.Real("x")
    chain = x
    for i in range(50):
        chain = chain + i
    assert larger_than([chain], 10)
    assert not larger_than([chain, chain], 200)


# ---------------------------------------------------------------- end to end, on a hand-written PTX kernel

PTX = """.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u32 k_param_2)
{{
	.reg .pred %p<3>;
	.reg .b32 %r<6>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u64 %rd2, [k_param_1];
	ld.param.u32 %r2, [k_param_2];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.s32 %r1, %r3, %r4, %r5;
	setp.lt.s32 %p1, %r1, %r2;
	setp.lt.s32 %p2, %r1, {load_bound};
	mul.wide.s32 %rd5, %r1, 4;
	add.s64 %rd6, %rd1, %rd5;
	add.s64 %rd7, %rd2, %rd5;
	mov.f32 %f1, 0fFF800000;
	@%p2 ld.global.f32 %f1, [%rd6];
	{compute}
	@%p1 st.global.f32 [%rd7], %f2;
	ret;
}}
"""

def _verify_ptx(directory, name: str, load_bound: str, compute: str, expr: str = "torch.relu(x)") -> dict:
    elementwise_task(directory, name, PTX.format(load_bound=load_bound, compute=compute), expr, n=1000, blocks=5,
                     source="kernel.ptx")
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(directory / "lark.toml"), "--json"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    return json.loads(proc.stdout)


def test_padded_lane_through_max_verifies(tmp_path):
    """relu as max(x, 0) over a load padded with -inf past the tensor: the padding drops out of the max and the
    masked-off store stores nothing."""
    result = _verify_ptx(tmp_path / "pad", "pad", "%r2", "max.f32 %f2, %f1, 0f00000000;")
    assert result["verdict"] == "verified", json.dumps(result, indent=2)


def test_masked_store_of_a_padded_register_stores_the_loaded_value(tmp_path):
    """The store's own predicate is the load's mask: where it stores, the register holds x, never -inf."""
    result = _verify_ptx(tmp_path / "copy", "copy", "%r2", "mov.f32 %f2, %f1;", "x * 2.0 - x")
    assert result["verdict"] == "verified", json.dumps(result, indent=2)


def test_store_of_a_lane_that_may_be_padded_stays_unknown(tmp_path):
    """The load's mask is one short of the store's: the last element would be stored as -inf."""
    result = _verify_ptx(tmp_path / "short", "short", "999", "mov.f32 %f2, %f1;")
    assert result["verdict"] == "unknown" and "-inf" in result["reason"], json.dumps(result, indent=2)
