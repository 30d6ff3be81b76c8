"""Random small single-thread PTX programs, run by the symbolic executor and by the concrete interpreter.

A program loads a few 32-bit integers from `a` and floats from `x`, runs random integer and float rows of
the instruction table (predicated, and under forward branches that skip a stretch), and stores every
register it defined on all paths into `z` (32-bit), `w` (64-bit) and `y` (floats). `compare` executes it
symbolically (`semantics.ptx.symexec.execute` through `semantics.ptx.bind.bind`), evaluates each stored
value at the inputs on real numbers (`semantics.replay.Evaluator`) and compares it with the interpreter's
final memory. Registers are only read where every path defined them.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import mpmath
import z3

from semantics.concrete import SparseBuffer, run_blocks
from semantics.errors import Unsupported
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.parser import parse_ptx
from semantics.ptx.symexec import execute
from semantics.replay import Evaluator, NotConcrete

N_INT, N_FLOAT = 3, 3
INT_VALUES = (0, 1, 2, 3, 7, 31, 32, 33, 255, -1, -2, -7, 0x7FFFFFFF, -0x80000000, 0x12345678, 65536)
FLOAT_VALUES = (0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 0.125, 10.0, -0.75)
FLOAT_CONSTANTS = (1.0, -2.0, 0.5, 3.25)
LAUNCH = Launch((1, 1, 1), (1, 1, 1))

INT_BINARY = ["add.s32", "sub.s32", "and.b32", "or.b32", "xor.b32", "min.s32", "min.u32", "max.s32", "max.u32",
              "mul.lo.s32", "mul.hi.s32", "mul.hi.u32", "div.s32", "div.u32", "rem.s32", "rem.u32"]
INT_UNARY = ["neg.s32", "not.b32", "abs.s32"]
SHIFTS = ["shl.b32", "shr.u32", "shr.s32", "shr.b32"]
BIT_FIELD_OPERANDS = (0, 1, 4, 8, 16, 31, 32, 33, 60, 64, 255, 256, 300)   # pos / len, masked to 0..255
INT_COMPARES = ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"]
FLOAT_BINARY = ["add.f32", "sub.f32", "mul.f32", "div.rn.f32", "min.f32", "max.f32", "add.rn.f32", "mul.rz.f32"]
FLOAT_UNARY = ["neg.f32", "abs.f32", "rcp.approx.f32", "ex2.approx.f32", "tanh.approx.f32", "sin.approx.f32",
               "cos.approx.f32", "sqrt.approx.f32", "lg2.approx.f32", "rsqrt.approx.f32"]
FLOAT_COMPARES = ["eq", "ne", "lt", "le", "gt", "ge", "ltu", "geu"]


@dataclass
class Program:
    text: str
    kernel: object
    ints: list[int]
    floats: list[float]
    n_z: int
    n_w: int
    n_y: int


class _Gen:
    def __init__(self, rng: random.Random, undefined: bool):
        self.rng, self.undefined = rng, undefined
        self.lines: list[str] = []
        self.counts = {"r": N_INT + 1, "rd": 8, "f": N_FLOAT + 1, "p": 1}
        self.defined = {"r": [f"%r{i}" for i in range(1, N_INT + 1)], "rd": [], "f": [f"%f{i}" for i in
                                                                                  range(1, N_FLOAT + 1)], "p": []}
        self.labels = 0

    def fresh(self, kind: str) -> str:
        name = f"%{kind}{self.counts[kind]}"
        self.counts[kind] += 1
        return name

    def dst(self, kind: str) -> str:
        """A new register, or (sometimes) one already defined on every path."""
        if self.defined[kind] and self.rng.random() < 0.3:
            return self.rng.choice(self.defined[kind])
        return self.fresh(kind)

    def src(self, kind: str) -> str:
        return self.rng.choice(self.defined[kind])

    def emit(self, text: str, kind: str, dst: str) -> None:
        guard = ""
        first = dst not in self.defined[kind] and self.undefined   # a first definition under a guard
        if (dst in self.defined[kind] or first) and self.defined["p"] and self.rng.random() < 0.3:
            guard = f"@{'!' if self.rng.random() < 0.5 else ''}{self.src('p')} "
        self.lines.append(f"{guard}{text};")
        if dst not in self.defined[kind]:
            self.defined[kind].append(dst)

    def int_operand(self) -> str:
        if self.rng.random() < 0.2:
            return str(self.rng.choice(INT_VALUES))
        return self.src("r")

    def instruction(self) -> None:
        rng, choice = self.rng, self.rng.random()
        if choice < 0.25:
            op, d = rng.choice(INT_BINARY), self.dst("r")
            self.emit(f"{op} {d}, {self.src('r')}, {self.int_operand()}", "r", d)
        elif choice < 0.30:
            op, d = rng.choice(INT_UNARY), self.dst("r")
            self.emit(f"{op} {d}, {self.src('r')}", "r", d)
        elif choice < 0.36:
            op, d = rng.choice(SHIFTS), self.dst("r")
            amount = str(rng.choice((0, 1, 5, 31, 32, 40))) if rng.random() < 0.5 else self.src("r")
            self.emit(f"{op} {d}, {self.src('r')}, {amount}", "r", d)
        elif choice < 0.39:
            self.bit_field_insert()
        elif choice < 0.42:
            d = self.dst("p")
            ty = rng.choice(("s32", "u32", "b32"))
            cmp = rng.choice(INT_COMPARES if ty != "b32" else ["eq", "ne"])
            self.emit(f"setp.{cmp}.{ty} {d}, {self.src('r')}, {self.int_operand()}", "p", d)
        elif choice < 0.46 and self.defined["p"]:
            kind = rng.choice(("r", "f"))
            d, ty = self.dst(kind), "b32" if kind == "r" else "f32"
            self.emit(f"selp.{ty} {d}, {self.src(kind)}, {self.src(kind)}, {self.src('p')}", kind, d)
        elif choice < 0.50:
            d = self.dst("r")
            self.emit(f"mad.lo.s32 {d}, {self.src('r')}, {self.int_operand()}, {self.src('r')}", "r", d)
        elif choice < 0.55:
            d = self.dst("rd")
            op = rng.choice(("mul.wide.s32", "mul.wide.u32"))
            self.emit(f"{op} {d}, {self.src('r')}, {self.int_operand()}", "rd", d)
        elif choice < 0.58:
            d = self.dst("rd")
            self.emit(f"cvt.{rng.choice(('s64.s32', 'u64.u32'))} {d}, {self.src('r')}", "rd", d)
        elif choice < 0.61 and self.defined["rd"]:
            d = self.dst("r")
            self.emit(f"cvt.u32.u64 {d}, {self.src('rd')}", "r", d)
        elif choice < 0.63 and self.defined["rd"]:
            d = self.dst("rd")
            self.emit(f"add.s64 {d}, {self.src('rd')}, {self.src('rd')}", "rd", d)
        elif choice < 0.78:
            op, d = rng.choice(FLOAT_BINARY), self.dst("f")
            self.emit(f"{op} {d}, {self.src('f')}, {self.float_operand()}", "f", d)
        elif choice < 0.84:
            op, d = rng.choice(FLOAT_UNARY), self.dst("f")
            self.emit(f"{op} {d}, {self.src('f')}", "f", d)
        elif choice < 0.88:
            d = self.dst("f")
            self.emit(f"fma.rn.f32 {d}, {self.src('f')}, {self.float_operand()}, {self.src('f')}", "f", d)
        elif choice < 0.92:
            d = self.dst("p")
            self.emit(f"setp.{rng.choice(FLOAT_COMPARES)}.f32 {d}, {self.src('f')}, {self.float_operand()}", "p", d)
        elif choice < 0.95:
            d = self.dst("f")
            self.emit(f"cvt.rn.f32.{rng.choice(('s32', 'u32'))} {d}, {self.src('r')}", "f", d)
        else:
            d = self.dst("f")
            self.emit(f"copysign.f32 {d}, {self.src('f')}, {self.src('f')}", "f", d)

    def bit_field_insert(self) -> None:
        """bfi.b32 on 32-bit registers or bfi.b64 on 64-bit ones; pos and len (.u32) are registers or
        literals around the clamping edges (past the msb, 0xff mask)."""
        kind = "rd" if self.defined["rd"] and self.rng.random() < 0.4 else "r"
        d = self.dst(kind)
        pos, length = (str(self.rng.choice(BIT_FIELD_OPERANDS)) if self.rng.random() < 0.6 else self.src("r")
                       for _ in range(2))
        width = 64 if kind == "rd" else 32
        self.emit(f"bfi.b{width} {d}, {self.src(kind)}, {self.src(kind)}, {pos}, {length}", kind, d)

    def float_operand(self) -> str:
        if self.rng.random() < 0.2:
            bits = struct.unpack("<I", struct.pack("<f", self.rng.choice(FLOAT_CONSTANTS)))[0]
            return f"0f{bits:08X}"
        return self.src("f")

    def body(self, n: int) -> None:
        i = 0
        while i < n:
            if self.defined["p"] and self.rng.random() < 0.12:
                label = f"$L{self.labels}"
                self.labels += 1
                self.lines.append(f"@{'!' if self.rng.random() < 0.5 else ''}{self.src('p')} bra {label};")
                before = {k: list(v) for k, v in self.defined.items()}
                for _ in range(self.rng.randint(1, 4)):
                    self.instruction()
                    i += 1
                self.lines.append(f"{label}:")
                self.defined = before   # what the skipped stretch defined exists on one path only
            else:
                self.instruction()
                i += 1


HEADER = """.version 8.0
.target sm_90
.address_size 64
.visible .entry fuzz(.param .u64 pa, .param .u64 px, .param .u64 pz, .param .u64 pw, .param .u64 py)
{
"""


def generate(rng: random.Random, size: int = 12, undefined: bool = False) -> Program:
    """A random program; with `undefined`, a register's first definition may be predicated (defined on one
    path only), and it is stored afterwards."""
    g = _Gen(rng, undefined)
    g.body(size)
    loads = ["ld.param.u64 %rd1, [pa];", "ld.param.u64 %rd2, [px];", "ld.param.u64 %rd3, [pz];",
             "ld.param.u64 %rd4, [pw];", "ld.param.u64 %rd5, [py];"]
    loads += [f"ld.global.u32 %r{i}, [%rd1+{4 * (i - 1)}];" for i in range(1, N_INT + 1)]
    loads += [f"ld.global.f32 %f{i}, [%rd2+{4 * (i - 1)}];" for i in range(1, N_FLOAT + 1)]
    stores = [f"st.global.u32 [%rd3+{4 * j}], {r};" for j, r in enumerate(g.defined["r"])]
    stores += [f"st.global.u64 [%rd4+{8 * j}], {r};" for j, r in enumerate(g.defined["rd"])]
    stores += [f"st.global.f32 [%rd5+{4 * j}], {r};" for j, r in enumerate(g.defined["f"])]
    decls = [f".reg .b32 %r<{g.counts['r'] + 1}>;", f".reg .b64 %rd<{g.counts['rd'] + 1}>;",
             f".reg .f32 %f<{g.counts['f'] + 1}>;", f".reg .pred %p<{g.counts['p'] + 1}>;"]
    text = HEADER + "\n".join(decls + loads + g.lines + stores + ["ret;", "}"]) + "\n"
    ints = [rng.choice(INT_VALUES) & 0xFFFFFFFF for _ in range(N_INT)]
    floats = [rng.choice(FLOAT_VALUES) for _ in range(N_FLOAT)]
    kernel = parse_ptx(text).kernels["fuzz"]
    return Program(text, kernel, ints, floats, len(g.defined["r"]), len(g.defined["rd"]), len(g.defined["f"]))


def _buffers(p: Program) -> dict[str, Buffer]:
    return {"a": Buffer("a", "int32", N_INT, 4, "input"), "x": Buffer("x", "float32", N_FLOAT, 4, "input"),
            "z": Buffer("z", "int32", max(p.n_z, 1), 4, "output"),
            "w": Buffer("w", "int64", max(p.n_w, 1), 8, "output"),
            "y": Buffer("y", "float32", max(p.n_y, 1), 4, "output")}


def concrete(p: Program) -> dict[tuple[str, int], object] | None:
    """The interpreter's stored values, or None where it cannot say (a division by zero, an undefined real)."""
    kernel = p.kernel
    b = _buffers(p)
    sparse = {"a": SparseBuffer(b["a"], dict(enumerate(p.ints))), "x": SparseBuffer(b["x"], dict(enumerate(p.floats))),
              **{n: SparseBuffer(b[n]) for n in "zwy"}}
    try:
        result = run_blocks(kernel, LAUNCH, [b[n] for n in "axzwy"], sparse, [(0, 0, 0)])
    except Unsupported:
        return None
    if not result.completed:
        return {("halted", 0): result.halted.kind}
    return {(n, i): v for n in "zwy" for i, v in result.written[n].items()}


def symbolic(p: Program) -> dict[tuple[str, int], object] | None:
    """The symbolic executor's stored values at the program's inputs, or None where it is unsupported or its
    value has no real evaluation."""
    kernel = p.kernel
    b = _buffers(p)
    try:
        ctx = bind(kernel, LAUNCH, [b[n] for n in "axzwy"], b)
        execute(kernel, ctx)
    except Unsupported:
        return None
    a_fn, x_fn = b["a"].contents(), b["x"].contents()
    pairs = [(a_fn(z3.BitVecVal(i, 64)), z3.BitVecVal(v, 32)) for i, v in enumerate(p.ints)]
    pairs += [(x_fn(z3.BitVecVal(i, 64)), z3.RealVal(v)) for i, v in enumerate(p.floats)]
    pairs += [(v, z3.BitVecVal(0, 32)) for v in ctx.thread.variables()]
    solver = z3.Solver()
    solver.check()
    model = solver.model()

    def holds(guard: z3.BoolRef) -> bool:
        term = z3.simplify(z3.substitute(guard, *pairs))
        return z3.is_true(term) or (not z3.is_false(term) and bool(Evaluator(model).value(term)))

    try:
        undefined = any(holds(r.guard) for r in ctx.undefined_reads)
    except NotConcrete:
        return None
    if undefined:
        return {("halted", 0): "undefined_register"}   # a memory-safety finding: the run has no final state
    found: dict[tuple[str, int], object] = {}
    for access in ctx.accesses:
        if access.kind != "store":
            continue
        try:
            if not holds(access.guard):
                continue
        except NotConcrete:
            return None
        first = z3.simplify(z3.substitute(access.offset, *pairs)).as_long() // access.elem_bytes
        for j, value in enumerate(access.values):
            term = z3.simplify(z3.substitute(value, *pairs))
            try:
                found[(access.buffer, first + j)] = term.as_long() if z3.is_bv_value(term) else \
                    Evaluator(solver.model()).value(term)
            except NotConcrete:
                return None
    return found


def same(a: object, b: object) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        x, y = mpmath.mpf(a), mpmath.mpf(b)
    except (TypeError, ValueError):
        return False
    if mpmath.isnan(x) or mpmath.isnan(y):
        return False
    return x == y or abs(x - y) <= max(abs(x), abs(y), 1) * mpmath.mpf(10) ** -25


def compare(p: Program) -> str | None:
    """None when both agree (or either cannot say), else a description of the mismatch."""
    c = concrete(p)
    if c is None:
        return None
    s = symbolic(p)
    if s is None:
        return None
    if ("halted", 0) in c or ("halted", 0) in s:
        if c.get(("halted", 0)) == s.get(("halted", 0)):
            return None
        return f"concrete {c.get(('halted', 0), 'completed')}, symbolic {s.get(('halted', 0), 'completed')}"
    if set(c) != set(s):
        return f"stored elements differ: concrete {sorted(c)} symbolic {sorted(s)}"
    wrong = [(k, c[k], s[k]) for k in sorted(c) if not same(c[k], s[k])]
    nan_concrete = [k for k, v, _ in wrong if isinstance(v, mpmath.mpf) and mpmath.isnan(v)]
    wrong = [w for w in wrong if w[0] not in nan_concrete]   # an undefined real concretely: no comparison
    return None if not wrong else "; ".join(f"{k}: concrete {v} symbolic {w}" for k, v, w in wrong)
