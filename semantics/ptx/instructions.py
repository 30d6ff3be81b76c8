"""What each PTX instruction computes: one table from opcode to meaning.

Arithmetic is split by operand kind. Integer rows act on bit-vectors of the instruction's width, so
overflow wraps exactly as on the GPU; float rows act on reals (DESIGN §3), with approximate instructions
mapped to ideal functions through the named axioms of `semantics/axioms.py`. Rounding and flush-to-zero
modifiers do not change a real value and are ignored; every other modifier must be understood by its row.

Control flow (`bra`, `ret`, `exit`) and memory (`ld`, `st`, `cvta`) live in `symexec.py` and
`memory.py`; an opcode found in no table is outside the modelled fragment and raises `Unsupported`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import z3

from semantics.axioms import ideal
from semantics.errors import Unsupported
from semantics.ptx import magic, neginf
from semantics.ptx.ast import Instr, IntImm
from semantics.ptx.floats import f32
from semantics.ptx.machine import Pointer, address_is_zero
from semantics.ptx.types import ROUNDING_MODIFIERS, PtxType, types_in

if TYPE_CHECKING:
    from semantics.ptx.symexec import ThreadState

LOG2E_F32 = f32(1.4426950408889634)
LN2_F32 = f32(0.6931471805599453)
LN2 = z3.Real("ln2")  # the irrational ln 2, pinned by LN2_BOUNDS wherever it is used
LN2_BOUNDS = z3.And(LN2 > z3.RealVal("0.6931471805"), LN2 < z3.RealVal("0.6931471806"))


def real_max(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)


def real_min(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a <= b, a, b)


def real_abs(a: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= 0, a, -a)


# ---------------------------------------------------------------- integer rows (bit-vectors)

INT_BINARY: dict[str, Callable[[z3.BitVecRef, z3.BitVecRef, bool], z3.BitVecRef]] = {
    "add": lambda a, b, s: a + b,
    "sub": lambda a, b, s: a - b,
    "and": lambda a, b, s: a & b,
    "or": lambda a, b, s: a | b,
    "xor": lambda a, b, s: a ^ b,
    "min": lambda a, b, s: z3.If(a <= b, a, b) if s else z3.If(z3.ULE(a, b), a, b),
    "max": lambda a, b, s: z3.If(a >= b, a, b) if s else z3.If(z3.UGE(a, b), a, b),
    "div": lambda a, b, s: a / b if s else z3.UDiv(a, b),
    "rem": lambda a, b, s: z3.SRem(a, b) if s else z3.URem(a, b),
}

INT_UNARY: dict[str, Callable[[z3.BitVecRef], z3.BitVecRef]] = {
    "neg": lambda a: -a,
    "not": lambda a: ~a,
    "abs": lambda a: z3.If(a < 0, -a, a),
}

INT_COMPARE: dict[str, Callable[[z3.BitVecRef, z3.BitVecRef, bool], z3.BoolRef]] = {
    "eq": lambda a, b, s: a == b,
    "ne": lambda a, b, s: a != b,
    "lt": lambda a, b, s: a < b if s else z3.ULT(a, b),
    "le": lambda a, b, s: a <= b if s else z3.ULE(a, b),
    "gt": lambda a, b, s: a > b if s else z3.UGT(a, b),
    "ge": lambda a, b, s: a >= b if s else z3.UGE(a, b),
    "lo": lambda a, b, s: z3.ULT(a, b),
    "ls": lambda a, b, s: z3.ULE(a, b),
    "hi": lambda a, b, s: z3.UGT(a, b),
    "hs": lambda a, b, s: z3.UGE(a, b),
}

# ---------------------------------------------------------------- float rows (reals)

FLOAT_BINARY: dict[str, Callable[[z3.ArithRef, z3.ArithRef], z3.ArithRef]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "min": real_min,
    "max": real_max,
}

FLOAT_COMPARE: dict[str, Callable[[z3.ArithRef, z3.ArithRef], z3.BoolRef]] = {
    # Ordered and unordered forms coincide on reals (there is no NaN).
    **{k: f for base, f in (("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b),
                            ("lt", lambda a, b: a < b), ("le", lambda a, b: a <= b),
                            ("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b))
       for k in (base, base + "u")},
}


def _ex2(x: z3.ArithRef, ex: ThreadState) -> z3.ArithRef:
    """2^x, recognising the exp idiom `ex2(x * log2(e))` that __expf, expf and tl.exp compile to."""
    if z3.is_mul(x) and x.num_args() == 2:
        for value, other in ((x.arg(0), x.arg(1)), (x.arg(1), x.arg(0))):
            if z3.is_rational_value(value) and abs(value.as_fraction()) == LOG2E_F32:
                ex.use_axiom("ex2.log2e")
                sign = 1 if value.as_fraction() > 0 else -1
                return ideal("exp")(other if sign > 0 else -other)
    ex.use_axiom("ex2.approx")
    ex.assume(LN2_BOUNDS)
    return ideal("exp")(x * LN2)


def _lg2(x: z3.ArithRef, ex: ThreadState) -> z3.ArithRef:
    ex.use_axiom("lg2.approx")
    ex.assume(LN2_BOUNDS)
    return ideal("log")(x) / LN2


FLOAT_UNARY: dict[str, tuple[str | None, Callable[[z3.ArithRef, ThreadState], z3.ArithRef]]] = {
    # opcode: (axiom used when the instruction is approximate, meaning)
    "neg": (None, lambda a, ex: -a),
    "abs": (None, lambda a, ex: real_abs(a)),
    "rcp": ("rcp.approx", lambda a, ex: 1 / a),
    "sqrt": ("sqrt.approx", lambda a, ex: ideal("sqrt")(a)),
    "rsqrt": ("rsqrt.approx", lambda a, ex: 1 / ideal("sqrt")(a)),
    "ex2": (None, _ex2),
    "lg2": (None, _lg2),
    "tanh": ("tanh.approx", lambda a, ex: ideal("tanh")(a)),
    "sin": ("sin.approx", lambda a, ex: ideal("sin")(a)),
    "cos": ("cos.approx", lambda a, ex: ideal("cos")(a)),
}

# Modifiers an arithmetic row may carry beyond rounding: `.approx`/`.full` select an axiom, `.sat` clamps.
ARITH_MODIFIERS = frozenset({".approx", ".full", ".sat", ".lo", ".hi", ".wide", ".cc", ".relu"})


# ---------------------------------------------------------------- helpers


def one_type(ins: Instr) -> PtxType:
    ts = types_in(ins.mods)
    if len(ts) != 1:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` with {len(ts)} type modifiers", f"line {ins.line}")
    return ts[0]


def check_modifiers(ins: Instr, allowed: frozenset[str]) -> None:
    """Refuse modifiers this row does not understand rather than silently ignoring them."""
    for m in ins.mods:
        if m not in allowed and m not in ROUNDING_MODIFIERS and m not in _TYPE_NAMES:
            raise Unsupported(f"modifier `{m}` of `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")


def _saturate(value: z3.ArithRef, ins: Instr) -> z3.ArithRef:
    if ".sat" in ins.mods:
        return real_min(real_max(value, z3.RealVal(0)), z3.RealVal(1))
    if ".relu" in ins.mods:
        return real_max(value, z3.RealVal(0))
    return value


def _approx_axiom(ins: Instr, ex: ThreadState, axiom: str | None) -> None:
    if axiom and (".approx" in ins.mods or ".full" in ins.mods):
        ex.use_axiom(axiom)


# ---------------------------------------------------------------- handlers


def _binary(ex: ThreadState, ins: Instr) -> None:
    check_modifiers(ins, ARITH_MODIFIERS)
    ty = one_type(ins)
    dst, a_op, b_op = ins.operands
    if ty.is_float:
        if ins.opcode not in FLOAT_BINARY:
            raise Unsupported(f"`{ins.opcode}` on floats", f"line {ins.line}")
        _approx_axiom(ins, ex, "div.approx" if ins.opcode == "div" else None)
        a, b = ex.read_padded(a_op, ty), ex.read_padded(b_op, ty)
        if ex.ctx.marks(a) or ex.ctx.marks(b):
            if {".sat", ".relu"} & set(ins.mods):
                raise Unsupported(f"-inf (a masked lane's padding) reaches `{ins.opcode}{''.join(ins.mods)}`",
                                  f"line {ins.line}")
            result = neginf.binary(ins.opcode, a, b, FLOAT_BINARY[ins.opcode], f"line {ins.line}", ex.ctx.marks)
        else:
            result = FLOAT_BINARY[ins.opcode](a, b)
        ex.write(dst, _saturate(result, ins))
        return
    if ins.opcode == "mul":
        ex.write(dst, magic.rewrite(_int_multiply(ex, ins, ty, ex.read(a_op, ty), ex.read(b_op, ty))))
        return
    if ".sat" in ins.mods or ".cc" in ins.mods:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` (saturating or carry arithmetic)", f"line {ins.line}")
    if ins.opcode in ("add", "sub") and ex.is_pointer(a_op, b_op):
        ex.write(dst, ex.pointer_arith(ins.opcode, a_op, b_op, ty))
        return
    if ins.opcode not in INT_BINARY:
        raise Unsupported(f"`{ins.opcode}` on integers", f"line {ins.line}")
    ex.write(dst, magic.rewrite(INT_BINARY[ins.opcode](ex.read(a_op, ty), ex.read(b_op, ty), ty.signed)))


def _int_multiply(ex: ThreadState, ins: Instr, ty: PtxType, a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:
    """mul.lo / mul.hi / mul.wide: the low half, high half or full product of the double-width product."""
    w = ty.bits
    if ".lo" in ins.mods or not ({".hi", ".wide"} & set(ins.mods)):
        return a * b
    extend = z3.SignExt if ty.signed else z3.ZeroExt
    full = extend(w, a) * extend(w, b)
    return full if ".wide" in ins.mods else z3.Extract(2 * w - 1, w, full)


def _mad(ex: ThreadState, ins: Instr) -> None:
    """mad/fma: a*b + c, with the product's width chosen by .lo/.hi/.wide as for mul."""
    check_modifiers(ins, ARITH_MODIFIERS)
    ty = one_type(ins)
    dst, a_op, b_op, c_op = ins.operands
    if ty.is_float:
        value = ex.read(a_op, ty) * ex.read(b_op, ty) + ex.read(c_op, ty)
        ex.write(dst, _saturate(value, ins))
        return
    if ".sat" in ins.mods or ".cc" in ins.mods:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    product = _int_multiply(ex, ins, ty, ex.read(a_op, ty), ex.read(b_op, ty))
    if ex.is_pointer(c_op):
        ex.write(dst, ex.read_raw(c_op).moved(_to64(product, ty)))
        return
    c_ty = PtxType(ty.name, ty.kind, 2 * ty.bits) if ".wide" in ins.mods else ty
    ex.write(dst, product + ex.read(c_op, c_ty))


def _to64(value: z3.BitVecRef, ty: PtxType) -> z3.BitVecRef:
    w = value.size()
    if w == 64:
        return value
    return (z3.SignExt if ty.signed else z3.ZeroExt)(64 - w, value)


def _unary(ex: ThreadState, ins: Instr) -> None:
    check_modifiers(ins, ARITH_MODIFIERS)
    ty = one_type(ins)
    dst, a_op = ins.operands
    if ty.kind == "pred":
        if ins.opcode != "not":
            raise Unsupported(f"`{ins.opcode}.pred`", f"line {ins.line}")
        ex.write(dst, z3.Not(ex.read(a_op, ty)))
        return
    if ty.is_float:
        if ins.opcode not in FLOAT_UNARY:
            raise Unsupported(f"`{ins.opcode}` on floats", f"line {ins.line}")
        axiom, meaning = FLOAT_UNARY[ins.opcode]
        _approx_axiom(ins, ex, axiom)
        a = ex.read_padded(a_op, ty)
        if ex.ctx.marks(a):
            if {".sat", ".relu"} & set(ins.mods):
                raise Unsupported(f"-inf (a masked lane's padding) reaches `{ins.opcode}{''.join(ins.mods)}`",
                                  f"line {ins.line}")
            ex.write(dst, neginf.unary(ins.opcode, a, lambda v: meaning(v, ex), f"line {ins.line}", ex.ctx.marks))
            return
        ex.write(dst, _saturate(meaning(a, ex), ins))
        return
    if ins.opcode not in INT_UNARY:
        raise Unsupported(f"`{ins.opcode}` on integers", f"line {ins.line}")
    ex.write(dst, INT_UNARY[ins.opcode](ex.read(a_op, ty)))


def _logic_pred(ex: ThreadState, ins: Instr) -> bool:
    """and/or/xor on predicates; returns False when the instruction is not a predicate op."""
    ty = one_type(ins)
    if ty.kind != "pred":
        return False
    dst, a_op, b_op = ins.operands
    fn = {"and": z3.And, "or": z3.Or, "xor": z3.Xor}[ins.opcode]
    ex.write(dst, fn(ex.read(a_op, ty), ex.read(b_op, ty)))
    return True


def _bitwise(ex: ThreadState, ins: Instr) -> None:
    if not _logic_pred(ex, ins):
        _binary(ex, ins)


def _shift(ex: ThreadState, ins: Instr) -> None:
    """shl / shr: the amount is a .u32 whatever the width; shr.s is arithmetic, shr.u/.b logical."""
    check_modifiers(ins, frozenset())
    ty = one_type(ins)
    dst, a_op, b_op = ins.operands
    if ty.bits < 32:
        raise Unsupported(f"`{ins.opcode}` on {ty.bits}-bit values", f"line {ins.line}")
    a = ex.read(a_op, ty)
    amount = ex.read(b_op, PtxType(".u32", "unsigned", 32))
    if ty.bits > 32:
        amount = z3.ZeroExt(ty.bits - 32, amount)
    if ins.opcode == "shl":
        value = a << amount
    else:
        value = a >> amount if ty.signed else magic.rewrite(z3.LShR(a, amount))
    ex.write(dst, value)


def _bfi(ex: ThreadState, ins: Instr) -> None:
    """bfi.b32 / bfi.b64 f, a, b, c, d (PTX ISA, bit field insert): f is b with bits pos .. pos+len-1
    replaced by the low len bits of a, where pos = c & 0xff and len = d & 0xff (c, d are .u32). Bits past
    the msb are not written: len = 0 or pos > msb gives b. As masks: field = ((1 << len) - 1) << pos, a
    bit-vector shift by the width or more giving 0 (so len >= width makes all ones, pos >= width none)."""
    check_modifiers(ins, frozenset())
    ty = one_type(ins)
    if ty.name not in (".b32", ".b64"):
        raise Unsupported(f"`bfi{ty.name}`", f"line {ins.line}")
    dst, a_op, b_op, c_op, d_op = ins.operands
    u32 = PtxType(".u32", "unsigned", 32)
    pos, length = (ex.read(op, u32) & 0xFF for op in (c_op, d_op))
    if ty.bits > 32:
        pos, length = z3.ZeroExt(ty.bits - 32, pos), z3.ZeroExt(ty.bits - 32, length)
    one = z3.BitVecVal(1, ty.bits)
    field = ((one << length) - one) << pos
    a, b = ex.read(a_op, ty), ex.read(b_op, ty)
    ex.write(dst, (b & ~field) | ((a << pos) & field))


def _setp(ex: ThreadState, ins: Instr) -> None:
    """setp.cmp[.bool].type p[|q], a, b[, c]: compare, optionally combine with predicate c."""
    ty = one_type(ins)
    cmp = ins.mods[0].lstrip(".")
    combine = next((m.lstrip(".") for m in ins.mods[1:] if m in (".and", ".or", ".xor")), None)
    extra = {f".{cmp}", ".and", ".or", ".xor"}
    check_modifiers(ins, frozenset(extra))
    dst, a_op, b_op, *rest = ins.operands
    if ex.is_pointer(a_op, b_op):
        result = _null_test(ex, ins, cmp, a_op, b_op)
    elif ty.is_float:
        if cmp not in FLOAT_COMPARE:
            raise Unsupported(f"float comparison `{cmp}`", f"line {ins.line}")
        result = FLOAT_COMPARE[cmp](ex.read(a_op, ty), ex.read(b_op, ty))
    else:
        if cmp not in INT_COMPARE:
            raise Unsupported(f"integer comparison `{cmp}`", f"line {ins.line}")
        result = INT_COMPARE[cmp](ex.read(a_op, ty), ex.read(b_op, ty), ty.signed)
    negated = z3.Not(result)
    if combine:
        (c_op,) = rest
        c = ex.read(c_op, PtxType(".pred", "pred", 1))
        fn = {"and": z3.And, "or": z3.Or, "xor": z3.Xor}[combine]
        result, negated = fn(result, c), fn(negated, c)
    ex.write_pair(dst, result, negated)


def _null_test(ex: ThreadState, ins: Instr, cmp: str, a_op, b_op) -> z3.BoolRef:
    """`setp.eq|ne p, ptr, 0` (`ptr == nullptr`): a pointer compares with the literal 0 only, by the machine
    model's `address_is_zero`."""
    ptr_op, zero = (a_op, b_op) if ex.is_pointer(a_op) else (b_op, a_op)
    if cmp not in ("eq", "ne") or not isinstance(zero, IntImm) or zero.value != 0:
        raise Unsupported(f"a pointer comparison other than `== 0` / `!= 0` (`setp.{cmp}`)", f"line {ins.line}")
    ptr = ex.read_raw(ptr_op)
    is_zero = address_is_zero(ptr, ex.ctx.buffers[ptr.buffer])
    return is_zero if cmp == "eq" else z3.Not(is_zero)


def _selp(ex: ThreadState, ins: Instr) -> None:
    ty = one_type(ins)
    dst, a_op, b_op, c_op = ins.operands
    cond = ex.read(c_op, PtxType(".pred", "pred", 1))
    ex.write(dst, ex.select(cond, ex.read_data(a_op, ty), ex.read_data(b_op, ty)))


def _mov(ex: ThreadState, ins: Instr) -> None:
    ty = one_type(ins)
    dst, src = ins.operands
    ex.write(dst, ex.read_data(src, ty))


def _cvt(ex: ThreadState, ins: Instr) -> None:
    """cvt.dtype.atype: float<->float is the identity on reals; int<->int truncates or extends;
    int->float is the exact real of the integer. float->int rounding is not modelled."""
    check_modifiers(ins, frozenset({".sat"}))
    types = types_in(ins.mods)
    if len(types) != 2:
        raise Unsupported(f"`cvt{''.join(ins.mods)}`", f"line {ins.line}")
    dty, aty = types
    dst, src = ins.operands
    a = ex.read(src, aty)
    if dty.is_float and aty.is_float:
        if dty.bits < min(aty.bits, ex.ctx.precision.floor_bits):
            _narrowing(ex, ins, dty, aty)
        ex.write(dst, _saturate(a, ins))
    elif dty.is_float:
        ex.write(dst, z3.ToReal(z3.BV2Int(a, is_signed=aty.signed)))
    elif aty.is_float:
        raise Unsupported(f"float-to-integer conversion `cvt{''.join(ins.mods)}`", f"line {ins.line}")
    elif ".sat" in ins.mods:
        raise Unsupported(f"saturating integer conversion `cvt{''.join(ins.mods)}`", f"line {ins.line}")
    elif dty.bits <= aty.bits:
        ex.write(dst, z3.Extract(dty.bits - 1, 0, a) if dty.bits < aty.bits else a)
    else:
        ex.write(dst, (z3.SignExt if aty.signed else z3.ZeroExt)(dty.bits - aty.bits, a))


def _narrowing(ex: ThreadState, ins: Instr, dty: PtxType, aty: PtxType) -> None:
    """A conversion to a float format narrower than the reference computes in rounds away what the
    reference keeps: the identity on reals is then an assumption (axiom `float.narrowing`, listed with the
    line), made only when the task allows it; otherwise the conversion is outside the model."""
    what = f"narrowing float conversion `cvt{''.join(ins.mods)}` ({aty.name[1:]} to {dty.name[1:]})"
    if not ex.ctx.precision.allow_narrowing:
        raise Unsupported(f"{what}; --allow-narrowing takes it as the identity on reals", f"line {ins.line}")
    ex.use_axiom("float.narrowing")
    ex.use_axiom(f"float.narrowing@line {ins.line}")


def _copysign(ex: ThreadState, ins: Instr) -> None:
    """copysign.f32 d, a, b: |b| with the sign of a."""
    ty = one_type(ins)
    dst, a_op, b_op = ins.operands
    a, b = ex.read(a_op, ty), ex.read(b_op, ty)
    ex.write(dst, z3.If(a < 0, -real_abs(b), real_abs(b)))


ALU: dict[str, Callable[[ThreadState, Instr], None]] = {
    "add": _binary, "sub": _binary, "mul": _binary, "div": _binary, "rem": _binary,
    "min": _binary, "max": _binary,
    "and": _bitwise, "or": _bitwise, "xor": _bitwise,
    "mad": _mad, "fma": _mad,
    "neg": _unary, "not": _unary, "abs": _unary, "rcp": _unary, "sqrt": _unary, "rsqrt": _unary,
    "ex2": _unary, "lg2": _unary, "tanh": _unary, "sin": _unary, "cos": _unary,
    "shl": _shift, "shr": _shift, "bfi": _bfi,
    "setp": _setp, "selp": _selp, "mov": _mov, "cvt": _cvt, "copysign": _copysign,
}

_TYPE_NAMES = frozenset({".s8", ".s16", ".s32", ".s64", ".u8", ".u16", ".u32", ".u64", ".b8", ".b16", ".b32",
                         ".b64", ".b128", ".f16", ".bf16", ".f32", ".f64", ".pred"})

__all__ = ["ALU", "Pointer", "real_max", "real_min", "real_abs", "LN2", "LN2_BOUNDS"]
