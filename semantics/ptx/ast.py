"""The PTX abstract syntax the parser produces and the symbolic executor consumes.

Operands keep the spelling PTX gave them (register names with their `%`, labels with their `$`), so
findings can quote the source. Nothing here has meaning yet: meaning lives in `instructions.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reg:
    """A register, e.g. `%r1`, `%rd4`, `%p1`, or a special register such as `%tid.x` / `%ctaid.y`."""

    name: str


@dataclass(frozen=True)
class IntImm:
    """An integer literal (decimal, hex `0x..`, octal, binary); `value` is the Python int as written."""

    value: int


@dataclass(frozen=True)
class FloatImm:
    """A float literal. `bits` is the IEEE bit pattern of width `width` (32 for `0f`, 64 for `0d`).

    Decimal literals such as `1.5` are stored as their float64 bit pattern with width 64."""

    bits: int
    width: int


@dataclass(frozen=True)
class Sym:
    """A bare identifier: a label, a parameter name, or a variable (e.g. a `.shared` array)."""

    name: str


@dataclass(frozen=True)
class Addr:
    """A memory operand `[base+offset]`; `base` is a Reg or a Sym (parameter or variable name)."""

    base: Reg | Sym
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    """A vector operand `{%f1, %f2, %f3, %f4}`; an element may be `_` (a sink), kept as Sym('_')."""

    elems: tuple[Operand, ...]


Operand = Reg | IntImm | FloatImm | Sym | Addr | Vec


@dataclass(frozen=True)
class Instr:
    """One instruction.

    `opcode` is the first dotted component (`ld`, `mad`, `setp`); `mods` the rest in order, each with its
    leading dot (`('.global', '.nc', '.v4', '.f32')`). `pred` is the guard `@%p` / `@!%p` as
    (register name, negated). `line` is the 1-based line in the PTX text; `loc` is the most recent `.loc`
    directive's (file index, line) if the PTX carries debug lines."""

    opcode: str
    mods: tuple[str, ...]
    operands: tuple[Operand, ...]
    pred: tuple[str, bool] | None = None
    line: int = 0
    loc: tuple[int, int] | None = None


@dataclass(frozen=True)
class Label:
    name: str
    line: int = 0


@dataclass(frozen=True)
class Param:
    """A kernel parameter: `.param .u64 .ptr .align 1 name` has type '.u64' and is_ptr True."""

    name: str
    type: str
    is_ptr: bool = False
    align: int | None = None


@dataclass(frozen=True)
class VarDecl:
    """A state-space variable: `.shared .align 4 .b8 smem[512]` or `.extern .shared .b8 dyn[]`.

    `space` is '.shared', '.local', '.global' or '.const'; `size_bytes` is None for an unsized extern
    array (dynamic shared memory)."""

    name: str
    space: str
    type: str
    align: int | None
    size_bytes: int | None
    extern: bool = False


@dataclass
class Kernel:
    name: str
    params: list[Param]
    body: list[Instr | Label]
    regs: dict[str, str] = field(default_factory=dict)      # register name -> type ('.b32', '.pred', ...)
    vars: list[VarDecl] = field(default_factory=list)         # state-space variables declared in the body
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)  # '.reqntid' -> (128, 1, 1), ...


@dataclass
class Module:
    version: str
    target: str
    address_size: int
    kernels: dict[str, Kernel]
    vars: list[VarDecl] = field(default_factory=list)          # module-scope variables
    files: dict[int, str] = field(default_factory=dict)         # `.file` index -> path, for `.loc`
