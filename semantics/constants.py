"""Kernel literals identified with the reference's constants (issue 15, item 4).

The reference computes with float32 constants: SELU's alpha and scale, GELU's 1/sqrt(2) and sqrt(2/pi),
softplus's threshold, every Python float of the model rounded to the op's precision. A kernel writes its
own literal for each, and a literal typed with seven digits (`0.7978845f`) is often one ulp away from the
float32 value of the constant it means (0x3F4C4229 against 0x3F4C422A): under exact real arithmetic the two
differ, and the kernel would be refuted for a difference at float32 rounding level.

So a 32-bit float literal of the kernel within `MAX_ULPS` ulps of a reference constant (and not equal to
it) is identified with that constant: the literal is replaced by the constant's bits before the kernel is
executed, and each replacement is an instance of the axiom `float.constant`, listed in the result as
`constant 0x3F4C4229 taken as sqrt(2/pi) (0x3F4C422A)`. `exact` (the CLI's `--exact-constants`) forbids
it: the literals stay, and `near_misses` names them so that a refutation resting on such a difference is
not reported bare (`semantics.verdict`).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace

from semantics.ptx.ast import FloatImm, Instr, Kernel, Vec
from semantics.torch.graph import RefGraph, round_float
from semantics.torch.ops import M_2_SQRTPI, M_SQRT1_2, M_SQRT2

MAX_ULPS = 2
AXIOM = "float.constant"

# Constants an ATen op computes with that are not among its arguments (semantics/torch/ops.py uses them).
OP_CONSTANTS: dict[str, tuple[tuple[str, float], ...]] = {
    "aten.gelu.default": (("1/sqrt(2)", M_SQRT1_2), ("sqrt(2/pi)", M_SQRT2 * M_2_SQRTPI * 0.5),
                          ("0.044715", 0.044715)),
}


@dataclass(frozen=True)
class Identification:
    literal: int        # the kernel's float32 bits
    constant: int       # the reference constant's float32 bits
    name: str

    @property
    def axiom(self) -> str:
        return f"constant 0x{self.literal:08X} taken as {self.name} (0x{self.constant:08X})"


def f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _ordered(bits: int) -> int:
    """The float32 pattern as an integer whose order is the floats' order (so ulps are differences)."""
    return -(bits & 0x7FFFFFFF) if bits & 0x80000000 else bits


def ulps_apart(a: int, b: int) -> int:
    return abs(_ordered(a) - _ordered(b))


def _finite_f32(value: float) -> int | None:
    rounded = round_float(value)
    return f32_bits(rounded) if math.isfinite(rounded) and rounded != 0 else None


def _floats(value: object) -> list[float]:
    if isinstance(value, dict) and "float" in value:
        return [float.fromhex(value["float"])]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


def reference_constants(graph: RefGraph) -> dict[int, str]:
    """float32 bits -> name of every nonzero finite float constant the reference's ops compute with: the
    float arguments of its calls (named by value, op and argument) and the ops' own constants."""
    found: dict[int, str] = {}
    for node in graph.nodes:
        if node.get("op") != "call":
            continue
        target = node.get("target", "")
        for name, value in (node.get("args") or {}).items():
            for f in _floats(value):
                bits = _finite_f32(f)
                if bits is not None:
                    found.setdefault(bits, f"{f:.9g} ({target} {name})")
        args = node.get("args") or {}
        if target == "aten.elu.default":   # the negative branch's factor, alpha * scale in the op's precision
            alpha, scale = (_floats(args.get(n)) or [1.0] for n in ("alpha", "scale"))
            extra = (("alpha * scale", alpha[0] * scale[0]),)
        else:
            extra = OP_CONSTANTS.get(target, ())
        for name, f in extra:
            bits = _finite_f32(f)
            if bits is not None:
                found.setdefault(bits, name)
    return found


def _nearest(bits: int, constants: dict[int, str]) -> int | None:
    if bits in constants:
        return None
    close = [(ulps_apart(bits, c), c) for c in constants if 0 < ulps_apart(bits, c) <= MAX_ULPS
             and (bits ^ c) & 0x80000000 == 0]
    return min(close)[1] if close else None


def identify(kernel: Kernel, constants: dict[int, str]) -> tuple[Kernel, list[Identification]]:
    """The kernel with every 32-bit float literal near a reference constant replaced by that constant,
    and the identifications made (one per distinct literal)."""
    made: dict[int, Identification] = {}

    def operand(op: object) -> object:
        if isinstance(op, Vec):
            return replace(op, elems=tuple(operand(o) for o in op.elems))
        if isinstance(op, FloatImm) and op.width == 32:
            target = _nearest(op.bits, constants)
            if target is not None:
                made.setdefault(op.bits, Identification(op.bits, target, constants[target]))
                return FloatImm(target, 32)
        return op

    body = [replace(i, operands=tuple(operand(o) for o in i.operands)) if isinstance(i, Instr) else i
            for i in kernel.body]
    if not made:
        return kernel, []
    return replace(kernel, body=body), sorted(made.values(), key=lambda m: m.literal)


def near_misses(kernel: Kernel, constants: dict[int, str]) -> list[Identification]:
    """What `identify` would identify, without changing the kernel (for --exact-constants)."""
    return identify(kernel, constants)[1]
