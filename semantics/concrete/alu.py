"""Concrete meanings of the arithmetic, logic, comparison and conversion instructions.

Tables first (STYLE §1): integer rows act on Python ints and are wrapped to the instruction's width by the
decoder; signed rows see two's-complement values. Float rows act on reals; approximate instructions are the
ideal functions (DESIGN §3), evaluated by mpmath. Modifiers are separate small tables: rounding and flush
modifiers do not change a real; `.sat`/`.relu` clamp; `.lo`/`.hi`/`.wide` pick the product's part.
An opcode or modifier with no row raises `Unsupported`: the run cannot say what the kernel does.
"""

from __future__ import annotations

from collections.abc import Callable

import mpmath

from semantics.axioms import DERIVED, IDEAL_FUNCTIONS, exact
from semantics.errors import Unsupported
from semantics.ptx.ast import Instr, IntImm, Vec
from semantics.ptx.types import ROUNDING_MODIFIERS, TYPES, PtxType, types_in

from .operands import (
    PRED,
    address_reader,
    data_reader,
    float_reader,
    int_or_pointer,
    int_reader,
    pred_reader,
    reader,
    writer,
)
from .values import MPF, NAN, ONE, ZERO, Ptr, defined, mask, signed

Step = Callable[[object], int]


def _sv(a: int, w: int, s: bool) -> int:
    return signed(a, w) if s else a


def _div(a: int, b: int, w: int, s: bool) -> int:
    x, y = _sv(a, w, s), _sv(b, w, s)
    if y == 0:
        raise Unsupported("integer division by zero (its result is unspecified)")
    q = abs(x) // abs(y)
    return -q if (x < 0) != (y < 0) else q


def _rem(a: int, b: int, w: int, s: bool) -> int:
    x, y = _sv(a, w, s), _sv(b, w, s)
    return x - y * _div(a, b, w, s)


INT_BINARY: dict[str, Callable[[int, int, int, bool], int]] = {
    "add": lambda a, b, w, s: a + b,
    "sub": lambda a, b, w, s: a - b,
    "and": lambda a, b, w, s: a & b,
    "or": lambda a, b, w, s: a | b,
    "xor": lambda a, b, w, s: a ^ b,
    "min": lambda a, b, w, s: a if _sv(a, w, s) <= _sv(b, w, s) else b,
    "max": lambda a, b, w, s: a if _sv(a, w, s) >= _sv(b, w, s) else b,
    "div": _div,
    "rem": _rem,
}

INT_UNARY: dict[str, Callable[[int, int, bool], int]] = {
    "neg": lambda a, w, s: -a,
    "not": lambda a, w, s: ~a,
    "abs": lambda a, w, s: abs(signed(a, w)),
}

INT_COMPARE: dict[str, Callable[[int, int, int, bool], bool]] = {
    "eq": lambda a, b, w, s: a == b,
    "ne": lambda a, b, w, s: a != b,
    "lt": lambda a, b, w, s: _sv(a, w, s) < _sv(b, w, s),
    "le": lambda a, b, w, s: _sv(a, w, s) <= _sv(b, w, s),
    "gt": lambda a, b, w, s: _sv(a, w, s) > _sv(b, w, s),
    "ge": lambda a, b, w, s: _sv(a, w, s) >= _sv(b, w, s),
    "lo": lambda a, b, w, s: a < b,
    "ls": lambda a, b, w, s: a <= b,
    "hi": lambda a, b, w, s: a > b,
    "hs": lambda a, b, w, s: a >= b,
}


def _fdiv(a: MPF, b: MPF) -> MPF:
    return NAN if b == 0 else a / b


def _fmin(a: MPF, b: MPF) -> MPF:
    if mpmath.isnan(a) or mpmath.isnan(b):
        return NAN
    return a if a <= b else b


def _fmax(a: MPF, b: MPF) -> MPF:
    if mpmath.isnan(a) or mpmath.isnan(b):
        return NAN
    return a if a >= b else b


FLOAT_BINARY: dict[str, Callable[[MPF, MPF], MPF]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _fdiv,
    "min": _fmin,
    "max": _fmax,
}


def _real_or_nan(fn: Callable[[MPF], object]) -> Callable[[MPF], MPF]:
    """An ideal function, undefined (nan) where it has no real value."""
    def apply(a: MPF) -> MPF:
        if mpmath.isnan(a):
            return NAN
        try:
            v = fn(a)
        except (ValueError, ZeroDivisionError):
            return NAN
        return v if isinstance(v, MPF) else NAN
    return apply


def _sqrt(a: MPF) -> MPF:
    return NAN if a < 0 else mpmath.sqrt(a)


def _log2(a: MPF) -> MPF:
    return NAN if a < 0 else mpmath.log(a, 2)


FLOAT_UNARY: dict[str, Callable[[MPF], MPF]] = {
    "neg": lambda a: -a,
    "abs": abs,
    "rcp": lambda a: _fdiv(ONE, a),
    "sqrt": _real_or_nan(_sqrt),
    "rsqrt": _real_or_nan(lambda a: _fdiv(ONE, _sqrt(a))),
    "ex2": _real_or_nan(lambda a: mpmath.power(2, a)),
    "lg2": _real_or_nan(_log2),
    "tanh": _real_or_nan(mpmath.tanh),
    "sin": _real_or_nan(mpmath.sin),
    "cos": _real_or_nan(mpmath.cos),
}

_ORDERED = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
            "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
# Ordered and unordered forms coincide on the reals (no NaN is ever compared: `values.defined`).
FLOAT_COMPARE: dict[str, Callable[[MPF, MPF], bool]] = {**_ORDERED, **{k + "u": f for k, f in _ORDERED.items()}}

PRED_LOGIC: dict[str, Callable[[bool, bool], bool]] = {
    "and": lambda a, b: a and b, "or": lambda a, b: a or b, "xor": lambda a, b: a != b}

# Modifier tables.
ARITH_MODIFIERS = frozenset({".approx", ".full", ".sat", ".lo", ".hi", ".wide", ".relu"})
TYPE_NAMES = frozenset(TYPES)
# cvt's rounding to an integral value: a real function of the value (float->int, or float->float).
INTEGER_ROUNDING: dict[str, Callable[[MPF], MPF]] = {
    ".rni": lambda a: mpmath.nint(a), ".rzi": lambda a: mpmath.floor(a) if a >= 0 else mpmath.ceil(a),
    ".rmi": mpmath.floor, ".rpi": mpmath.ceil}
CLAMPS: dict[str, Callable[[MPF], MPF]] = {
    ".sat": lambda a: NAN if mpmath.isnan(a) else min(max(a, ZERO), ONE),
    ".relu": lambda a: NAN if mpmath.isnan(a) else max(a, ZERO),
}


def one_type(ins: Instr) -> PtxType:
    ts = types_in(ins.mods)
    if len(ts) != 1:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` with {len(ts)} type modifiers")
    return ts[0]


def check_modifiers(ins: Instr, allowed: frozenset[str]) -> None:
    for m in ins.mods:
        if m not in allowed and m not in ROUNDING_MODIFIERS and m not in TYPE_NAMES:
            raise Unsupported(f"modifier `{m}` of `{ins.opcode}{''.join(ins.mods)}`")


def _clamp(ins: Instr) -> Callable[[MPF], MPF] | None:
    found = [CLAMPS[m] for m in ins.mods if m in CLAMPS]
    return found[0] if found else None


def _finish(fn: Callable, clamp: Callable | None) -> Callable:
    return fn if clamp is None else (lambda *a: clamp(fn(*a)))


# ---------------------------------------------------------------- decoders: (program, ins, next pc) -> step


def binary(p, ins: Instr, nxt: int) -> Step:
    check_modifiers(ins, ARITH_MODIFIERS)
    ty = one_type(ins)
    dst, a_op, b_op = ins.operands
    if ty.kind == "pred" and ins.opcode in PRED_LOGIC:
        return _lifted(p, ins, nxt, PRED_LOGIC[ins.opcode], ty, (a_op, b_op))
    if ty.is_float:
        if ins.opcode not in FLOAT_BINARY:
            raise Unsupported(f"`{ins.opcode}` on floats")
        return _lifted(p, ins, nxt, _finish(FLOAT_BINARY[ins.opcode], _clamp(ins)), ty, (a_op, b_op))
    if ".sat" in ins.mods:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` (saturating integer arithmetic)")
    w, s, low = ty.bits, ty.signed, mask(ty.bits)
    if ins.opcode == "mul":
        return _multiply(p, ins, nxt, ty, None)
    if ins.opcode not in INT_BINARY:
        raise Unsupported(f"`{ins.opcode}` on integers")
    fn = INT_BINARY[ins.opcode]
    put = writer(p.regs, dst, ty)
    if ins.opcode in ("add", "sub"):   # a pointer operand moves the pointer
        ga, gb = int_or_pointer(p.regs, a_op, ty, p.variables), int_or_pointer(p.regs, b_op, ty, p.variables)
        sub = ins.opcode == "sub"

        def step_add(t) -> int:
            r = t.regs
            a, b = ga(r), gb(r)
            if type(a) is int and type(b) is int:
                put(r, fn(a, b, w, s) & low)
            else:
                put(r, _pointer_sum(a, b, w, sub))
            return nxt
        return step_add
    ga, gb = int_reader(p.regs, a_op, ty), int_reader(p.regs, b_op, ty)

    def step(t) -> int:
        r = t.regs
        put(r, fn(ga(r), gb(r), w, s) & low)
        return nxt
    return step


def _pointer_sum(a: object, b: object, w: int, sub: bool) -> Ptr:
    """ptr ± int (the int a two's-complement delta of its width), int + ptr; anything else loses provenance."""
    if isinstance(a, Ptr) and type(b) is int:
        delta = signed(b, w)
        return a.moved(-delta if sub else delta)
    if isinstance(b, Ptr) and type(a) is int and not sub:
        return b.moved(signed(a, w))
    raise Unsupported("arithmetic on pointers other than pointer ± integer")


def _lifted(p, ins: Instr, nxt: int, fn: Callable, ty: PtxType, ops: tuple) -> Step:
    """A row applied to operands read as `ty` (floats, predicates), result written as `ty`."""
    put = writer(p.regs, ins.operands[0], ty)
    getters = [reader(p.regs, op, ty) for op in ops]
    if len(getters) == 1:
        (g,) = getters

        def step1(t) -> int:
            r = t.regs
            put(r, fn(g(r)))
            return nxt
        return step1
    if len(getters) == 2:
        ga, gb = getters

        def step2(t) -> int:
            r = t.regs
            put(r, fn(ga(r), gb(r)))
            return nxt
        return step2

    def stepn(t) -> int:
        r = t.regs
        put(r, fn(*[g(r) for g in getters]))
        return nxt
    return stepn


def _product(ins: Instr, ty: PtxType) -> tuple[Callable[[int, int], int], PtxType]:
    """The part of the double-width product that mul/mad keep (.lo default, .hi, .wide), and its type."""
    w, s = ty.bits, ty.signed
    if ".wide" in ins.mods:
        return (lambda a, b: (_sv(a, w, s) * _sv(b, w, s)) & mask(2 * w)), PtxType(ty.name, ty.kind, 2 * w)
    if ".hi" in ins.mods:
        return (lambda a, b: ((_sv(a, w, s) * _sv(b, w, s)) >> w) & mask(w)), ty
    return (lambda a, b: (a * b) & mask(w)), ty


def _multiply(p, ins: Instr, nxt: int, ty: PtxType, c_op) -> Step:
    """mul and integer mad: the product's part, plus c (a pointer c is moved by the product)."""
    product, out_ty = _product(ins, ty)
    ga, gb = int_reader(p.regs, ins.operands[1], ty), int_reader(p.regs, ins.operands[2], ty)
    put = writer(p.regs, ins.operands[0], out_ty)
    if c_op is None:
        def step_mul(t) -> int:
            r = t.regs
            put(r, product(ga(r), gb(r)))
            return nxt
        return step_mul
    gc, w, low = int_or_pointer(p.regs, c_op, out_ty, p.variables), out_ty.bits, mask(out_ty.bits)

    def step_mad(t) -> int:
        r = t.regs
        m, c = product(ga(r), gb(r)), gc(r)
        put(r, (m + c) & low if type(c) is int else _pointer_sum(c, m, w, False))
        return nxt
    return step_mad


def mad(p, ins: Instr, nxt: int) -> Step:
    check_modifiers(ins, ARITH_MODIFIERS)
    ty = one_type(ins)
    if ty.is_float:
        fn = _finish(lambda a, b, c: a * b + c, _clamp(ins))
        return _lifted(p, ins, nxt, fn, ty, ins.operands[1:])
    if ".sat" in ins.mods:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}`")
    return _multiply(p, ins, nxt, ty, ins.operands[3])


def unary(p, ins: Instr, nxt: int) -> Step:
    check_modifiers(ins, ARITH_MODIFIERS)
    ty = one_type(ins)
    dst, a_op = ins.operands
    if ty.kind == "pred":
        if ins.opcode != "not":
            raise Unsupported(f"`{ins.opcode}.pred`")
        return _lifted(p, ins, nxt, lambda a: not a, ty, (a_op,))
    if ty.is_float:
        if ins.opcode not in FLOAT_UNARY:
            raise Unsupported(f"`{ins.opcode}` on floats")
        return _lifted(p, ins, nxt, _finish(FLOAT_UNARY[ins.opcode], _clamp(ins)), ty, (a_op,))
    if ins.opcode not in INT_UNARY:
        raise Unsupported(f"`{ins.opcode}` on integers")
    fn, w, s, low = INT_UNARY[ins.opcode], ty.bits, ty.signed, mask(ty.bits)
    return _lifted_int(p, ins, nxt, lambda a: fn(a, w, s) & low, ty, (a_op,))


def _lifted_int(p, ins: Instr, nxt: int, fn: Callable, ty: PtxType, ops: tuple) -> Step:
    put = writer(p.regs, ins.operands[0], ty)
    getters = [int_reader(p.regs, op, ty) for op in ops]

    def step(t) -> int:
        r = t.regs
        put(r, fn(*[g(r) for g in getters]))
        return nxt
    return step


def shift(p, ins: Instr, nxt: int) -> Step:
    """shl / shr: the amount is a .u32, clamped to the width; shr.s is arithmetic, shr.u/.b logical."""
    check_modifiers(ins, frozenset())
    ty = one_type(ins)
    if ty.bits < 32:
        raise Unsupported(f"`{ins.opcode}` on {ty.bits}-bit values")
    w, low = ty.bits, mask(ty.bits)
    left, arithmetic = ins.opcode == "shl", ty.signed
    put = writer(p.regs, ins.operands[0], ty)
    ga, gb = int_reader(p.regs, ins.operands[1], ty), int_reader(p.regs, ins.operands[2], TYPES[".u32"])

    def step(t) -> int:
        r = t.regs
        a, n = ga(r), min(gb(r), w)
        put(r, ((a << n) if left else (signed(a, w) >> n if arithmetic else a >> n)) & low)
        return nxt
    return step


def _insert_bits(a: int, b: int, pos: int, length: int, msb: int) -> int:
    """The PTX ISA's bfi loop: f = b; for i < len while pos + i <= msb: f[pos + i] = a[i]."""
    f = b
    for i in range(length):
        if pos + i > msb:
            break
        bit = 1 << (pos + i)
        f = (f | bit) if (a >> i) & 1 else (f & ~bit)
    return f


def bfi(p, ins: Instr, nxt: int) -> Step:
    """bfi.b32 / bfi.b64 f, a, b, c, d: bit field insert, pos = c & 0xff and len = d & 0xff (c, d .u32)."""
    check_modifiers(ins, frozenset())
    ty = one_type(ins)
    if ty.name not in (".b32", ".b64"):
        raise Unsupported(f"`bfi{ty.name}`")
    msb, u32 = ty.bits - 1, TYPES[".u32"]
    put = writer(p.regs, ins.operands[0], ty)
    ga, gb, gc, gd = (int_reader(p.regs, op, t) for op, t in zip(ins.operands[1:], (ty, ty, u32, u32), strict=True))

    def step(t) -> int:
        r = t.regs
        put(r, _insert_bits(ga(r), gb(r), gc(r) & 0xFF, gd(r) & 0xFF, msb))
        return nxt
    return step


def setp(p, ins: Instr, nxt: int) -> Step:
    """setp.cmp[.bool].type p[|q], a, b[, c]."""
    ty = one_type(ins)
    cmp = ins.mods[0].lstrip(".")
    combine = next((m.lstrip(".") for m in ins.mods[1:] if m in (".and", ".or", ".xor")), None)
    check_modifiers(ins, frozenset({f".{cmp}", ".and", ".or", ".xor"}))
    dst, a_op, b_op, *rest = ins.operands
    if ty.is_float:
        if cmp not in FLOAT_COMPARE:
            raise Unsupported(f"float comparison `{cmp}`")
        test, ga, gb = FLOAT_COMPARE[cmp], float_reader(p.regs, a_op, ty), float_reader(p.regs, b_op, ty)

        def compare(r: dict) -> bool:
            return test(defined(ga(r), "a comparison"), defined(gb(r), "a comparison"))
    else:
        if cmp not in INT_COMPARE:
            raise Unsupported(f"integer comparison `{cmp}`")
        itest, w, s = INT_COMPARE[cmp], ty.bits, ty.signed
        # `p == nullptr`: a pointer compares with an integer literal by its address
        pointers = w == 64 and cmp in ("eq", "ne") and IntImm in (type(a_op), type(b_op))
        ga, gb = (address_reader if pointers else int_reader)(p.regs, a_op, ty), \
            (address_reader if pointers else int_reader)(p.regs, b_op, ty)

        def compare(r: dict) -> bool:
            return itest(ga(r), gb(r), w, s)
    join = PRED_LOGIC[combine] if combine else None
    gc = pred_reader(p.regs, rest[0]) if combine else None
    targets = list(dst.elems) if isinstance(dst, Vec) else [dst]
    puts = [writer(p.regs, d, PRED) for d in targets]

    def step(t) -> int:
        r = t.regs
        v = compare(r)
        pair = (v, not v)
        if join is not None:
            c = gc(r)
            pair = (join(v, c), join(not v, c))
        for put, value in zip(puts, pair, strict=False):
            put(r, value)
        return nxt
    return step


def selp(p, ins: Instr, nxt: int) -> Step:
    ty = one_type(ins)
    dst, a_op, b_op, c_op = ins.operands
    ga, gb = data_reader(p.regs, a_op, ty, p.variables), data_reader(p.regs, b_op, ty, p.variables)
    gc, put = pred_reader(p.regs, c_op), writer(p.regs, dst, ty)

    def step(t) -> int:
        r = t.regs
        put(r, ga(r) if gc(r) else gb(r))
        return nxt
    return step


def mov(p, ins: Instr, nxt: int) -> Step:
    ty = one_type(ins)
    dst, src = ins.operands
    if isinstance(src, Vec) or isinstance(dst, Vec):
        raise Unsupported("packing or unpacking registers with `mov`")
    g, put = data_reader(p.regs, src, ty, p.variables), writer(p.regs, dst, ty)

    def step(t) -> int:
        r = t.regs
        put(r, g(r))
        return nxt
    return step


def _to_int(value: MPF, ty: PtxType, rounding: Callable[[MPF], MPF]) -> int:
    """A real rounded to an integer of type ty, saturating at its range (PTX cvt's float-to-integer rule)."""
    n = int(rounding(defined(value, "a float-to-integer conversion")))
    lo, hi = (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1) if ty.signed else (0, mask(ty.bits))
    return min(max(n, lo), hi) & mask(ty.bits)


def cvt(p, ins: Instr, nxt: int) -> Step:
    """cvt.dtype.atype: float<->float is the identity on reals (narrowing included, DESIGN §3) unless an
    integer rounding (.rni/.rzi/.rmi/.rpi) is named; int->float is the integer's real; float->int rounds as
    named and saturates; int<->int truncates or extends by the source's signedness (.sat clamps)."""
    check_modifiers(ins, frozenset({".sat", ".relu", *INTEGER_ROUNDING}))
    types = types_in(ins.mods)
    if len(types) != 2:
        raise Unsupported(f"`cvt{''.join(ins.mods)}`")
    dty, aty = types
    rounding = next((INTEGER_ROUNDING[m] for m in ins.mods if m in INTEGER_ROUNDING), None)
    clamp = _clamp(ins)
    src = ins.operands[1]
    if dty.is_float and aty.is_float:
        fn = _finish(rounding or (lambda a: a), clamp)
    elif dty.is_float:
        w, s = aty.bits, aty.signed
        fn = _finish(lambda a: MPF(_sv(a, w, s)), clamp)
    elif aty.is_float:
        if rounding is None:
            raise Unsupported(f"float-to-integer conversion `cvt{''.join(ins.mods)}` without an integer rounding")
        fn = lambda a: _to_int(a, dty, rounding)  # noqa: E731
    else:
        fn = _int_conversion(ins, dty, aty)
    return _lifted_src(p, ins, nxt, fn, dty, reader(p.regs, src, aty))


def _int_conversion(ins: Instr, dty: PtxType, aty: PtxType) -> Callable[[int], int]:
    w, s, low = aty.bits, aty.signed, mask(dty.bits)
    if ".sat" not in ins.mods:
        return lambda a: _sv(a, w, s) & low
    lo, hi = (-(1 << (dty.bits - 1)), (1 << (dty.bits - 1)) - 1) if dty.signed else (0, low)
    return lambda a: min(max(_sv(a, w, s), lo), hi) & low


def _lifted_src(p, ins: Instr, nxt: int, fn: Callable, dty: PtxType, g) -> Step:
    put = writer(p.regs, ins.operands[0], dty)

    def step(t) -> int:
        r = t.regs
        put(r, fn(g(r)))
        return nxt
    return step


def copysign(p, ins: Instr, nxt: int) -> Step:
    """copysign.f32 d, a, b: |b| with the sign of a."""
    ty = one_type(ins)
    return _lifted(p, ins, nxt, lambda a, b: -abs(b) if a < 0 else abs(b), ty, ins.operands[1:])


def ideal_call(p, ins: Instr, nxt: int) -> Step:
    """`lark.ideal.<fn>.<type>.<idiom> d, x` (a recognised library sequence, `semantics/ptx/idioms.py`):
    d = fn(x)."""
    name = ins.mods[0].lstrip(".") if ins.mods else ""
    if len(ins.mods) != 3 or len(ins.operands) != 2 or name not in IDEAL_FUNCTIONS and name not in DERIVED:
        raise Unsupported(f"pseudo-instruction `{ins.opcode}{''.join(ins.mods)}`")
    fn, ty = exact(name), TYPES[ins.mods[1]]
    return _lifted(p, ins, nxt, _real_or_nan(fn), ty, ins.operands[1:])


ALU: dict[str, Callable] = {
    "add": binary, "sub": binary, "mul": binary, "div": binary, "rem": binary, "min": binary, "max": binary,
    "and": binary, "or": binary, "xor": binary,
    "mad": mad, "fma": mad,
    "neg": unary, "not": unary, "abs": unary, "rcp": unary, "sqrt": unary, "rsqrt": unary,
    "ex2": unary, "lg2": unary, "tanh": unary, "sin": unary, "cos": unary,
    "shl": shift, "shr": shift, "bfi": bfi,
    "setp": setp, "selp": selp, "mov": mov, "cvt": cvt, "copysign": copysign,
    "lark.ideal": ideal_call,
}
