"""Operand access, decided once per instruction: each operand becomes a small getter `get(regs) -> value`
and each destination a setter `put(regs, value)`, so running an instruction does no parsing.

Integer registers hold the unsigned pattern of their declared width. An instruction of another width reads
the low bits (narrower) or the extension its type names (wider), and its result is extended or truncated to
the destination register's width as PTX does (`ld.u8` into a 32-bit register zero-extends, `ld.s8` sign-
extends). Floats moved through integer registers stay reals; integer bits read as a float are decoded.
"""

from __future__ import annotations

from collections.abc import Callable

from semantics.errors import Unsupported
from semantics.ptx.ast import FloatImm, IntImm, Reg, Sym, Vec
from semantics.ptx.types import TYPES, PtxType

from .values import MPF, Ptr, kind, mask, real_of_bits, signed

Getter = Callable[[dict], object]
Setter = Callable[[dict, object], None]

PRED = TYPES[".pred"]
SPECIAL_AXES = ("x", "y", "z")
SPECIAL = frozenset({*(f"%{r}.{a}" for r in ("tid", "ntid", "ctaid", "nctaid") for a in SPECIAL_AXES),
                     "%laneid", "%warpid", "%nwarpid", "%lanemask_eq", "%lanemask_lt", "%lanemask_le",
                     "%lanemask_gt", "%lanemask_ge"})
CONSTANT_SYMBOLS = {"WARP_SZ": 32}


class Registers:
    """The declared width of every register of a kernel (special registers are 32-bit)."""

    def __init__(self, declared: dict[str, str]):
        self.widths = {name: TYPES[t].bits if t in TYPES else None for name, t in declared.items()}

    def width(self, reg: Reg) -> int | None:
        if reg.name in SPECIAL:
            return 32
        if reg.name not in self.widths:
            raise Unsupported(f"register `{reg.name}` (not declared, or a special register not modelled)")
        return self.widths[reg.name]


def _int_value(v: object, ty: PtxType) -> int:
    if isinstance(v, Ptr):
        raise Unsupported("a pointer used as a plain integer (its provenance would be lost)")
    raise Unsupported(f"{kind(v)} used in `{ty.name}` integer arithmetic")


def int_reader(regs: Registers, op, ty: PtxType) -> Getter:
    """The operand as a `ty.bits`-bit pattern."""
    bits = ty.bits
    if isinstance(op, IntImm):
        value = op.value & mask(bits)
        return lambda r: value
    if isinstance(op, FloatImm):
        value = op.bits & mask(bits)
        return lambda r: value
    if isinstance(op, Sym) and op.name in CONSTANT_SYMBOLS:
        value = CONSTANT_SYMBOLS[op.name]
        return lambda r: value
    if not isinstance(op, Reg):
        raise Unsupported(f"operand {op!r} where an integer was expected")
    name, width = op.name, regs.width(op)
    if width is None or width == bits:
        def get(r: dict) -> int:
            v = r[name]
            if type(v) is not int:
                _int_value(v, ty)
            return v
        return get
    low, wide = mask(bits), bits > width

    def adjust(r: dict) -> int:
        v = r[name]
        if type(v) is not int:
            _int_value(v, ty)
        if wide and ty.signed:
            return signed(v, width) & low
        return v & low
    return adjust


def float_reader(regs: Registers, op, ty: PtxType) -> Getter:
    """The operand as a real; integer bits are decoded as an IEEE value of the instruction's type."""
    if isinstance(op, IntImm):
        value = MPF(op.value)
        return lambda r: value
    if isinstance(op, FloatImm):
        value = real_of_bits(op.bits, op.width)
        return lambda r: value
    if not isinstance(op, Reg):
        raise Unsupported(f"operand {op!r} where a float was expected")
    name, bits, bfloat = op.name, ty.bits, ty.name == ".bf16"
    regs.width(op)

    def get(r: dict) -> MPF:
        v = r[name]
        if type(v) is MPF:
            return v
        if type(v) is int:
            return real_of_bits(v, bits, bfloat)
        raise Unsupported(f"{kind(v)} used as a `{ty.name}` float")
    return get


def pred_reader(regs: Registers, op) -> Getter:
    if isinstance(op, IntImm):
        value = bool(op.value)
        return lambda r: value
    if not isinstance(op, Reg):
        raise Unsupported(f"operand {op!r} where a predicate was expected")
    name = op.name
    regs.width(op)

    def get(r: dict) -> bool:
        v = r[name]
        if type(v) is not bool:
            raise Unsupported(f"{kind(v)} used as a predicate")
        return v
    return get


def reader(regs: Registers, op, ty: PtxType) -> Getter:
    """The operand as the instruction's type reads it."""
    if ty.kind == "pred":
        return pred_reader(regs, op)
    if ty.is_float:
        return float_reader(regs, op, ty)
    return int_reader(regs, op, ty)


def data_reader(regs: Registers, op, ty: PtxType, shared: dict[str, str]) -> Getter:
    """An operand of a data-movement instruction (mov, selp, st, shfl): a register's value of any kind, a
    float literal as its real, a variable's name as a pointer to it (`shared` maps names to spaces)."""
    if isinstance(op, Reg):
        name = op.name
        regs.width(op)
        return lambda r: r[name]
    if isinstance(op, FloatImm):
        value = real_of_bits(op.bits, op.width)
        return lambda r: value
    if isinstance(op, Sym) and op.name in shared:
        pointer = Ptr(shared[op.name], op.name, 0)
        return lambda r: pointer
    return reader(regs, op, ty)


def _sink(r: dict, v: object) -> None:
    return None


def writer(regs: Registers, dst, ty: PtxType) -> Setter:
    """Store a result of type `ty` into a register, extended or truncated to the register's width."""
    if isinstance(dst, Sym) and dst.name == "_":
        return _sink
    if not isinstance(dst, Reg):
        raise Unsupported(f"destination {dst!r}")
    name, width = dst.name, regs.width(dst)
    if dst.name in SPECIAL:
        raise Unsupported(f"a write to special register `{dst.name}`")
    if width is None or not ty.is_int or width == ty.bits:
        def put(r: dict, v: object) -> None:
            r[name] = v
        return put
    low, extend = mask(width), ty.signed and width > ty.bits

    def put_adjusted(r: dict, v: object) -> None:
        if type(v) is int:
            v = (signed(v, ty.bits) if extend else v) & low
        r[name] = v
    return put_adjusted


def elements(op) -> list:
    """The registers of a vector operand `{a, b, c, d}`, or the one operand."""
    return list(op.elems) if isinstance(op, Vec) else [op]


def int_or_pointer(regs: Registers, op, ty: PtxType, variables: dict[str, str]) -> Getter:
    """An integer operand of add/sub/mad that may hold a pointer (then returned as is, to be moved)."""
    if isinstance(op, Sym) and op.name in variables:
        return data_reader(regs, op, ty, variables)
    as_int = int_reader(regs, op, ty)
    if not isinstance(op, Reg):
        return as_int
    name = op.name

    def get(r: dict) -> object:
        v = r[name]
        return v if type(v) is Ptr else as_int(r)
    return get
