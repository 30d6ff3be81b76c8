"""Each instruction family of the semantics table, on concrete values, against Python's arithmetic.

Bit-vector rows must wrap exactly as the GPU does; float rows are exact reals; modifiers the table does
not know must be refused, never ignored.
"""

from fractions import Fraction

import pytest
import z3

from semantics.concrete import SparseBuffer, run_blocks
from semantics.errors import Unsupported
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx
from tests.ptx_helpers import run_alu, value

M32 = (1 << 32) - 1


def bv(v: int, w: int = 32) -> z3.BitVecRef:
    return z3.BitVecVal(v % (1 << w), w)


def s32(v: int) -> int:
    return v % (1 << 32)


INTEGER_CASES = [
    # (instruction, a, b, expected result as unsigned 32-bit)
    ("add.s32 %r3, %r1, %r2;", 0x7FFFFFFF, 1, 0x80000000),           # wraps
    ("sub.s32 %r3, %r1, %r2;", 0, 1, M32),
    ("mul.lo.s32 %r3, %r1, %r2;", 0x10000, 0x10000, 0),
    ("mul.hi.s32 %r3, %r1, %r2;", s32(-2), 3, M32),                   # high word of -6
    ("mul.hi.u32 %r3, %r1, %r2;", 0x80000000, 4, 2),
    ("and.b32 %r3, %r1, %r2;", 0xF0F0, 0xFF00, 0xF000),
    ("or.b32 %r3, %r1, %r2;", 0xF0F0, 0x0F0F, 0xFFFF),
    ("xor.b32 %r3, %r1, %r2;", 0xFFFF, 0x0F0F, 0xF0F0),
    ("shl.b32 %r3, %r1, %r2;", 1, 31, 0x80000000),
    ("shl.b32 %r3, %r1, %r2;", 1, 40, 0),                              # shift >= width gives 0
    ("shr.s32 %r3, %r1, %r2;", s32(-8), 1, s32(-4)),                   # arithmetic
    ("shr.u32 %r3, %r1, %r2;", s32(-8), 1, 0x7FFFFFFC),                # logical
    ("min.s32 %r3, %r1, %r2;", s32(-1), 1, s32(-1)),
    ("min.u32 %r3, %r1, %r2;", s32(-1), 1, 1),
    ("max.s32 %r3, %r1, %r2;", s32(-1), 1, 1),
    ("div.s32 %r3, %r1, %r2;", s32(-7), 2, s32(-3)),                   # truncates toward zero
    ("rem.s32 %r3, %r1, %r2;", s32(-7), 2, s32(-1)),
    ("div.u32 %r3, %r1, %r2;", 7, 2, 3),
]


@pytest.mark.parametrize("ins,a,b,expected", INTEGER_CASES, ids=[c[0] for c in INTEGER_CASES])
def test_integer_binary(ins, a, b, expected):
    state = run_alu(ins, {"%r1": bv(a), "%r2": bv(b)})
    assert value(state, "%r3") == expected


def test_mul_wide_and_mad_wide_sign_extend():
    state = run_alu("mul.wide.s32 %rd1, %r1, %r2;\nmad.wide.u32 %rd2, %r1, %r2, %rd3;",
                    {"%r1": bv(-3), "%r2": bv(5), "%rd3": bv(10, 64)})
    assert value(state, "%rd1") == (-15) % (1 << 64)
    assert value(state, "%rd2") == (s32(-3) * 5 + 10) % (1 << 64)


def test_mad_lo_wraps():
    state = run_alu("mad.lo.s32 %r4, %r1, %r2, %r3;", {"%r1": bv(0x10000), "%r2": bv(0x10000), "%r3": bv(7)})
    assert value(state, "%r4") == 7


def test_unary_integer_ops():
    state = run_alu("neg.s32 %r2, %r1;\nnot.b32 %r3, %r1;\nabs.s32 %r4, %r1;", {"%r1": bv(-5)})
    assert (value(state, "%r2"), value(state, "%r3"), value(state, "%r4")) == (5, 4, 5)


@pytest.mark.parametrize("cmp,a,b,expected", [
    ("lt.s32", -1, 0, True), ("lt.u32", -1, 0, False), ("ge.s32", 3, 3, True), ("ne.s32", 3, 4, True),
    ("hi.u32", -1, 1, True), ("ls.u32", 1, 1, True), ("eq.b32", 2, 2, True), ("gt.s64", -1, -2, True),
])
def test_setp_integer(cmp, a, b, expected):
    w = 64 if cmp.endswith("64") else 32
    r = "%rd" if w == 64 else "%r"
    state = run_alu(f"setp.{cmp} %p1|%p2, {r}1, {r}2;", {f"{r}1": bv(a, w), f"{r}2": bv(b, w)})
    assert value(state, "%p1") is expected and value(state, "%p2") is (not expected)


def test_setp_combines_with_predicate():
    state = run_alu("setp.lt.and.s32 %p2, %r1, %r2, %p1;", {"%r1": bv(1), "%r2": bv(2), "%p1": z3.BoolVal(False)})
    assert value(state, "%p2") is False


def test_selp_and_predicate_logic():
    state = run_alu("and.pred %p3, %p1, %p2;\nor.pred %p4, %p1, %p2;\nselp.b32 %r3, %r1, %r2, %p4;\n"
                    "not.pred %p5, %p3;", {"%p1": z3.BoolVal(True), "%p2": z3.BoolVal(False),
                                            "%r1": bv(11), "%r2": bv(22)})
    assert (value(state, "%p3"), value(state, "%p4"), value(state, "%r3"), value(state, "%p5")) == \
        (False, True, 11, True)


@pytest.mark.parametrize("ins,src,w_src,expected,w", [
    ("cvt.s64.s32 %rd1, %r1;", -1, 32, (1 << 64) - 1, 64),   # sign extension
    ("cvt.u64.u32 %rd1, %r1;", -1, 32, M32, 64),              # zero extension
    ("cvt.u32.u64 %r1, %rd1;", (1 << 40) + 5, 64, 5, 32),     # truncation
    ("cvt.s32.s16 %r1, %rs1;", -2, 16, s32(-2), 32),
])
def test_cvt_integer(ins, src, w_src, expected, w):
    src_reg = {"32": "%r1", "64": "%rd1", "16": "%rs1"}[str(w_src)]
    dst_reg = "%rd1" if w == 64 else "%r1"
    state = run_alu(ins, {src_reg: bv(src, w_src)})
    assert value(state, dst_reg) == expected


def test_cvt_int_to_float_is_exact_real():
    state = run_alu("cvt.rn.f32.s32 %f1, %r1;\ncvt.rn.f32.u32 %f2, %r1;", {"%r1": bv(-3)})
    assert value(state, "%f1") == Fraction(-3) and value(state, "%f2") == Fraction(s32(-3))


def test_float_arithmetic_is_exact():
    third = z3.RealVal(Fraction(1, 3))
    state = run_alu("add.f32 %f3, %f1, %f2;\nmul.rn.f32 %f4, %f1, %f2;\ndiv.rn.f32 %f5, %f1, %f2;\n"
                    "fma.rn.f32 %f6, %f1, %f2, %f1;\nsub.f32 %f7, %f1, %f2;\nneg.f32 %f8, %f2;\n"
                    "abs.f32 %f9, %f8;\nmin.f32 %f10, %f1, %f2;\nmax.f32 %f11, %f1, %f2;\nrcp.rn.f32 %f12, %f2;",
                    {"%f1": third, "%f2": z3.RealVal(3)})
    got = [value(state, f"%f{i}") for i in range(3, 13)]
    assert got == [Fraction(10, 3), 1, Fraction(1, 9), Fraction(4, 3), Fraction(-8, 3), -3, 3, Fraction(1, 3), 3,
                   Fraction(1, 3)]


def test_float_immediates_are_exact_f32_values():
    state = run_alu("add.f32 %f2, %f1, 0f3DCCCCCD;", {"%f1": z3.RealVal(0)})
    assert value(state, "%f2") == Fraction(13421773, 134217728)  # the f32 nearest 0.1, not 1/10


def test_saturate_clamps_to_unit_interval():
    state = run_alu("add.sat.f32 %f3, %f1, %f2;", {"%f1": z3.RealVal(2), "%f2": z3.RealVal(1)})
    assert value(state, "%f3") == 1


def test_ex2_of_log2e_product_is_exp():
    state = run_alu("mul.f32 %f2, %f1, 0f3FB8AA3B;\nex2.approx.ftz.f32 %f3, %f2;", {"%f1": z3.Real("x")})
    assert str(state.regs["%f3"]) == "exp(x)"
    assert "ex2.log2e" in state.ctx.axioms


def test_setp_float_compares_reals():
    state = run_alu("setp.gtu.f32 %p1, %f1, %f2;", {"%f1": z3.RealVal(1), "%f2": z3.RealVal(0)})
    assert value(state, "%p1") is True


def test_predicated_write_keeps_old_value():
    state = run_alu("@%p1 mov.u32 %r1, 7;", {"%p1": z3.BoolVal(False), "%r1": bv(3)})
    assert value(state, "%r1") == 3


@pytest.mark.parametrize("ins", ["add.cc.u32 %r3, %r1, %r2;", "add.sat.s32 %r3, %r1, %r2;",
                                 "cvt.rzi.s32.f32 %r1, %f1;", "shl.b16 %rs2, %rs1, 1;"])
def test_unmodelled_forms_are_refused(ins):
    regs = {"%r1": bv(1), "%r2": bv(2), "%f1": z3.RealVal(1), "%rs1": bv(1, 16)}
    with pytest.raises(Unsupported):
        run_alu(ins, regs)


def test_float_bits_in_integer_arithmetic_are_refused():
    with pytest.raises(Unsupported, match="float bits"):
        run_alu("and.b32 %r2, %r1, 2147483647;", {"%r1": z3.Real("x")})


M64 = (1 << 64) - 1


BIT_FIELD_CASES = [
    (32, 0xF, 0, 4, 4, 0xF0),
    (32, 0xFF, 0x12345678, 8, 4, 0x12345F78),                 # only len bits of a
    (32, 0xAB, 0xFFFFFFFF, 0, 0, 0xFFFFFFFF),                 # len 0: b
    (32, 0xFF, 0x0, 28, 8, 0xF0000000),                       # bits past the msb are dropped
    (32, 0x1, 0x0, 32, 1, 0),                                 # pos past the msb: b
    (32, 0xFFFFFFFF, 0x0, 0, 40, M32),                        # len >= width: every bit from pos
    (32, 0x3, 0x0, 0x104, 0x102, 0x30),                       # pos, len masked to 0..255
    (64, 0xF, 0x1, 60, 8, 0xF000000000000001),
    (64, M64, 0, 3, 255, M64 & ~0x7),
]


@pytest.mark.parametrize("width, a, b, pos, length, expected", BIT_FIELD_CASES)
def test_bit_field_insert(width, a, b, pos, length, expected):
    r = "%rd" if width == 64 else "%r"
    state = run_alu(f"bfi.b{width} {r}3, {r}1, {r}2, %r5, %r6;",
                    {f"{r}1": bv(a, width), f"{r}2": bv(b, width), "%r5": bv(pos), "%r6": bv(length)})
    assert value(state, f"{r}3") == expected


BFI_KERNEL = """.version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 pa, .param .u64 pc, .param .u64 pz)
{{
.reg .b32 %r<8>;
.reg .b64 %rd<8>;
ld.param.u64 %rd1, [pa];
ld.param.u64 %rd2, [pc];
ld.param.u64 %rd3, [pz];
ld.global.u64 %rd4, [%rd1];
ld.global.u64 %rd5, [%rd1+8];
ld.global.u32 %r1, [%rd2];
ld.global.u32 %r2, [%rd2+4];
{body}
st.global.u64 [%rd3], %rd6;
ret;
}}
"""
BFI_BODIES = {
    32: "cvt.u32.u64 %r3, %rd4;\ncvt.u32.u64 %r4, %rd5;\nbfi.b32 %r5, %r3, %r4, %r1, %r2;\ncvt.u64.u32 %rd6, %r5;",
    64: "bfi.b64 %rd6, %rd4, %rd5, %r1, %r2;",
}


@pytest.mark.parametrize("width, a, b, pos, length, expected", BIT_FIELD_CASES)
def test_bit_field_insert_in_the_concrete_interpreter(width, a, b, pos, length, expected):
    """The interpreter's bfi (written from the ISA's bit loop, apart from the symbolic row) on the same cases."""
    kernel = parse_ptx(BFI_KERNEL.format(body=BFI_BODIES[width])).kernels["t"]
    buffers = [Buffer("a", "int64", 2, 8, "input"), Buffer("c", "int32", 2, 4, "input"),
               Buffer("z", "int64", 1, 8, "output")]
    contents = {"a": SparseBuffer(buffers[0], {0: a, 1: b}), "c": SparseBuffer(buffers[1], {0: pos, 1: length}),
                "z": SparseBuffer(buffers[2])}
    result = run_blocks(kernel, Launch((1, 1, 1), (1, 1, 1)), buffers, contents, [(0, 0, 0)])
    assert result.completed and result.written["z"][0] == expected
