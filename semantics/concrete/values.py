"""The interpreter's values: integers as bit patterns, floats as reals, predicates, pointers with provenance.

A register holds one of
* an `int`: the unsigned bit pattern of the register's width (signedness is the instruction's business);
* an `mpf`: a real number (DESIGN §3), 50 digits, as `semantics/replay.py` evaluates them; ±inf are the
  extended reals that `-inf` paddings use, and `nan` marks an undefined real (a division by zero, a
  function outside its domain): it may be stored, but a comparison, branch or conversion that reads it
  raises `Unsupported` (the run cannot say what the kernel does);
* a `bool`: a predicate;
* a `Ptr`: `offset` bytes into one buffer, as the symbolic model keeps provenance, so every access is
  checked against the allocation its address came from. The null pointer (a `"null"` argument) points
  into an allocation of no bytes at address 0: comparing it with 0 is true, any access is out of bounds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction

import mpmath

from semantics.errors import Unsupported

mpmath.mp.dps = 50
MPF = type(mpmath.mpf(0))
NAN = mpmath.mpf("nan")
ZERO = mpmath.mpf(0)
ONE = mpmath.mpf(1)
MASK64 = (1 << 64) - 1
ALLOCATION_BASE = 1 << 40   # every bound allocation's address (only comparisons with integers see it)


@dataclass(frozen=True, slots=True)
class Ptr:
    """An address with provenance: `offset` bytes into `buffer` of state space `space`, a 64-bit two's-
    complement value (address arithmetic wraps at 64 bits)."""

    space: str
    buffer: str
    offset: int
    base: int = ALLOCATION_BASE    # where the allocation sits: 0 for what the null pointer points into

    def moved(self, delta: int) -> Ptr:
        offset = self.offset + delta
        if not -(1 << 63) <= offset < 1 << 63:
            offset = signed(offset & MASK64, 64)
        return Ptr(self.space, self.buffer, offset, self.base)

    @property
    def address(self) -> int:
        """The 64-bit address: what a comparison of the pointer with an integer (`p != nullptr`) sees."""
        return (self.base + self.offset) & MASK64


class Undefined:
    """What a read of never-written shared or local memory returns: it may be moved and stored, but an
    instruction that computes with it raises `Unsupported` (its value is not determined)."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = Undefined()


def signed(v: int, width: int) -> int:
    """The two's-complement value of a `width`-bit pattern."""
    return v - (1 << width) if v >> (width - 1) & 1 else v


def mask(width: int) -> int:
    return (1 << width) - 1


_FLOAT_FORMATS = {16: ("<H", "<e"), 32: ("<I", "<f"), 64: ("<Q", "<d")}


def real_of_bits(bits: int, width: int, bfloat: bool = False) -> MPF:
    """The real an IEEE bit pattern denotes (bf16: the upper half of an f32); inf and nan as mpmath's."""
    if bfloat:
        bits, width = (bits & 0xFFFF) << 16, 32
    if width not in _FLOAT_FORMATS:
        raise Unsupported(f"float bits of width {width}")
    int_fmt, float_fmt = _FLOAT_FORMATS[width]
    return mpmath.mpf(struct.unpack(float_fmt, struct.pack(int_fmt, bits & mask(width)))[0])


def real(value: object) -> MPF:
    """A witness number (int, float, Fraction, str) as an exact mpf."""
    if isinstance(value, MPF):
        return value
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    if isinstance(value, bool):
        raise Unsupported(f"a predicate {value} where a real was expected")
    return mpmath.mpf(value)


def defined(v: MPF, what: str) -> MPF:
    """`v`, refusing an undefined real where the program's behaviour would depend on it."""
    if mpmath.isnan(v):
        raise Unsupported(f"an undefined real (a division by zero or a function outside its domain) reaches {what}")
    return v


def kind(v: object) -> str:
    """A short name of a value's kind, for messages."""
    names = {int: "integer bits", MPF: "a real", bool: "a predicate", Ptr: "a pointer",
             Undefined: "an undefined value (a read of never-written shared or local memory)"}
    return names.get(type(v), type(v).__name__)
