"""PTX scalar types and the small tables that interpret type-dependent modifiers.

A register's PTX type says how many bits it holds; what those bits *mean* (an integer, a float, a
predicate) is decided per instruction by its type suffix. Values in the model are typed accordingly:
integers and untyped bits are bit-vectors of their PTX width, floats are reals, predicates booleans.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PtxType:
    name: str       # '.s32'
    kind: str       # 'signed' | 'unsigned' | 'bits' | 'float' | 'pred'
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("signed", "unsigned", "bits")

    @property
    def signed(self) -> bool:
        return self.kind == "signed"

    @property
    def bytes(self) -> int:
        return max(self.bits // 8, 1)


TYPES: dict[str, PtxType] = {
    t.name: t
    for t in (
        *(PtxType(f".s{w}", "signed", w) for w in (8, 16, 32, 64)),
        *(PtxType(f".u{w}", "unsigned", w) for w in (8, 16, 32, 64)),
        *(PtxType(f".b{w}", "bits", w) for w in (8, 16, 32, 64, 128)),
        PtxType(".f16", "float", 16),
        PtxType(".bf16", "float", 16),
        PtxType(".f32", "float", 32),
        PtxType(".f64", "float", 64),
        PtxType(".pred", "pred", 1),
    )
}

# Packed and exotic float formats are not modelled: an instruction carrying one is outside the fragment.
UNMODELLED_TYPES = frozenset({".f16x2", ".bf16x2", ".e4m3", ".e5m2", ".e4m3x2", ".e5m2x2", ".tf32", ".f8x2",
                              ".s4", ".u4", ".b1"})

# Modifiers that change rounding or flush subnormals: under exact real arithmetic they do not change the
# value (DESIGN §3), so they are accepted and ignored.
ROUNDING_MODIFIERS = frozenset({".rn", ".rz", ".rm", ".rp", ".rna", ".ftz"})


def types_in(mods: tuple[str, ...]) -> list[PtxType]:
    """The type modifiers of an instruction, in order (cvt and friends carry two)."""
    return [TYPES[m] for m in mods if m in TYPES]
