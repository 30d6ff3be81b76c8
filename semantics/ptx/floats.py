"""Exact real values of IEEE bit patterns, for float literals and for float constants moved as bits."""

from __future__ import annotations

import struct
from fractions import Fraction

import z3

from semantics.errors import Unsupported
from semantics.ptx.neginf import NEG_INF, NEG_INF_BITS

_FORMATS = {16: ("<H", "<e"), 32: ("<I", "<f"), 64: ("<Q", "<d")}


def float_of_bits(bits: int, width: int) -> Fraction:
    """The exact rational an IEEE bit pattern denotes; infinities and NaN are outside the reals."""
    if width not in _FORMATS:
        raise Unsupported(f"float literal of width {width}")
    int_fmt, float_fmt = _FORMATS[width]
    value = struct.unpack(float_fmt, struct.pack(int_fmt, bits))[0]
    if value != value or value in (float("inf"), float("-inf")):
        raise Unsupported(f"non-finite float constant 0x{bits:0{width // 4}x}")
    return Fraction(value)


def real_of_bits(bits: int, width: int) -> z3.ArithRef:
    """The real an IEEE bit pattern denotes; -inf becomes the padding marker of `semantics.ptx.neginf` (never
    a real: only that module's rules may compute with it); +inf and NaN stay unsupported."""
    if NEG_INF_BITS.get(width) == bits:
        return NEG_INF
    return z3.RealVal(float_of_bits(bits, width))


def f32(value: float) -> Fraction:
    """The float32 rounding of `value`, exactly."""
    return Fraction(struct.unpack("<f", struct.pack("<f", value))[0])
