"""The -inf padding rules (`semantics.ptx.neginf`) against IEEE-754 arithmetic on Python floats.

Each rule rewrites an operation on If(c, v, -inf); at every concrete c, v and operand the rewritten term must
give what the hardware gives with a real -inf (Python floats are IEEE doubles; the samples are small dyadic
numbers, so no rounding enters). Whatever has no rule must be refused, naming -inf.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
import z3

from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.instructions import real_max, real_min
from semantics.ptx.neginf import NEG_INF
from tests.ptx_helpers import run_alu

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
