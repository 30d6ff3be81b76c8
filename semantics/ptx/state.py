"""The state of one symbolic thread while its PTX runs: registers, path condition, recorded effects.

A register holds one of: a z3 Bool (predicate), a bit-vector of its PTX width, a real (a float value,
whatever register type carries it), or a `Pointer` with provenance. `read` coerces a value to what an
instruction's type suffix expects and refuses coercions that would need bit-level float semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.ast import Addr, FloatImm, Instr, IntImm, Reg, Sym, Vec
from semantics.ptx.floats import real_of_bits
from semantics.ptx.machine import CONSTANT_SYMBOLS, Buffer, Launch, Pointer, Thread
from semantics.ptx.types import PtxType

Value = z3.ExprRef | Pointer

def fresh_like(value: Value, hint: str, n: int) -> Value:
    """A fresh unconstrained value of the same kind (used for loop headers and dead registers); `n` comes
    from the execution's own counter, so names (and obligation texts) do not depend on earlier runs."""
    if isinstance(value, Pointer):
        return Pointer(value.space, value.buffer, z3.BitVec(f"{hint}.off!{n}", 64))
    return z3.Const(f"{hint}!{n}", value.sort())


@dataclass
class Access:
    """One memory access a symbolic thread may perform.

    `guard` says when it happens; inside loops it over-approximates reachability (the loop condition
    of the current iteration only), which is sound for proving safety. `loops` lists the (loop, iteration
    variable) pairs it lies in, so the exact reachability can be rebuilt when a witness needs it."""

    kind: str                       # 'load' | 'store' | 'atomic'
    space: str                      # 'global' | 'shared' | 'local'
    buffer: str
    offset: z3.BitVecRef            # bytes into the buffer, 64-bit
    width: int                      # bytes covered by the whole (vector) access
    elem_bytes: int
    values: tuple[z3.ExprRef, ...]  # stored values, one per element (stores only)
    guard: z3.BoolRef
    loops: tuple                    # ((LoopInfo, k), ...)
    line: int
    loc: tuple[int, int] | None
    phase: int = 0                  # barriers passed before it: accesses of one block in different phases
                                    # are ordered by a barrier
    # In or after a loop with barriers in its body, the exact number of barriers passed before it, as a
    # 64-bit term in the loop's iteration (semantics/ptx/loop_phases.py); `phase` is then not used.
    phase_term: z3.BitVecRef | None = None
    op: str = ""                    # atomics: the operation ('add', 'min', 'max')


@dataclass(frozen=True)
class SharedRead:
    """A load of shared memory after a barrier: `symbol` stands for its value until it is resolved. It is an
    application of a fresh function to the reader's coordinates (block and thread ids); an application to
    other coordinates is that thread's read."""

    symbol: z3.ExprRef
    buffer: str
    offset: z3.BitVecRef    # byte offset of the element read
    elem_bytes: int
    phase: int
    guard: z3.BoolRef
    line: int


@dataclass
class LoopRead:
    """Shared reads of one buffer in a loop body with barriers, after `segment` of its barriers, as seen by the
    generic run that summarises the loop: `func(iteration, byte offset)` stands for the value read until
    `semantics.properties.loop_shared` resolves it (or makes it opaque). `loop` and `base` (barriers passed
    before the loop) are set once the loop's real pass starts."""

    func: z3.FuncDeclRef
    buffer: str
    elem_bytes: int
    iteration: z3.BitVecRef         # the generic run's iteration symbol (replaced by the loop's k)
    lines: set[int] = field(default_factory=set)
    segments: set[int] = field(default_factory=set)
    loop: object = None
    base: int = 0


@dataclass
class ReadBack:
    """A load of a global buffer the kernel writes, in a loop body or after a loop (an output read back: a
    softmax normalising in place what an earlier loop stored). `func(block and thread ids, iteration)` stands
    for the element read (lane `lane` of the load at `line`) until `semantics.properties.readbacks` defines
    it by this thread's own earlier store (or makes it opaque). `iteration` is the enclosing loop's: the
    generic run's symbol there, the loop's k in the real pass (the generic run's accumulations over the read
    become comprehensions over func(..., j)); a read outside loops has no iteration argument. `records` are
    the real pass's load accesses at that line, each reading this placeholder."""

    func: z3.FuncDeclRef
    buffer: str
    line: int
    lane: int
    records: list = field(default_factory=list)


@dataclass(frozen=True)
class UndefinedRead:
    """A read of a register that holds no value when `guard` holds: no path defined it, or only a predicated
    write did and its predicate was false (memory safety: every read reads a value written earlier)."""

    register: str
    guard: z3.BoolRef               # the thread's path condition and the register's undefined condition
    loops: tuple                    # ((LoopInfo, k), ...), as for Access
    line: int


@dataclass(frozen=True)
class Precision:
    """What a float conversion may mean (DESIGN §3). Float casts are the identity on reals only down to the
    reference's own float width (`floor_bits`): a conversion to a narrower format (f16, bf16) rounds away
    what the reference keeps, so it is outside the model unless `allow_narrowing` makes it an instance of
    the listed axiom `float.narrowing`."""

    floor_bits: int = 32
    allow_narrowing: bool = False


@dataclass
class KernelContext:
    """What every thread of one launch shares: the kernel, launch, buffers and parameter values."""

    launch: Launch
    thread: Thread
    buffers: dict[str, Buffer]
    params: dict[str, Value]
    special: dict[str, z3.BitVecRef]
    accesses: list[Access] = field(default_factory=list)
    axioms: set[str] = field(default_factory=set)
    assumptions: list[z3.BoolRef] = field(default_factory=list)
    barrier_paths: list[tuple[z3.BoolRef, tuple[int, ...]]] = field(default_factory=list)  # (path, barrier lines)
    opaque: dict[str, str] = field(default_factory=dict)  # opaque value name -> why its value is not modelled
    # What the model assumed and the checker must prove, as (description, path condition of the thread):
    # every lane of the thread's warp follows the same path there (warp-synchronous exchanges need it).
    warp_uniform: list[tuple] = field(default_factory=list)   # (what, path condition[, its (LoopInfo, k)s])
    shared_reads: list[SharedRead] = field(default_factory=list)
    assumes_initialized: bool = False  # resolved shared reads rely on every shared read being initialised
    loop_reads: dict[str, LoopRead] = field(default_factory=dict)  # placeholder function name -> its reads
    loop_initialized: set[int] = field(default_factory=set)  # lines of loop reads proved to see a same-iteration write
    readbacks: dict[str, ReadBack] = field(default_factory=dict)  # placeholder function name -> its loads
    counter: list[int] = field(default_factory=lambda: [0])
    marks: neginf.Marks = field(default_factory=neginf.Marks)  # which values hold the -inf padding marker
    undefined_reads: list[UndefinedRead] = field(default_factory=list)
    precision: Precision = field(default_factory=lambda: Precision())

    def fresh(self) -> int:
        """The next number for a fresh symbol of this execution."""
        self.counter[0] += 1
        return self.counter[0]


@dataclass
class ThreadState:
    ctx: KernelContext
    regs: dict[str, Value] = field(default_factory=dict)
    path: list[z3.BoolRef] = field(default_factory=list)
    loops: tuple = ()                # enclosing (LoopInfo, k) pairs, innermost last
    own_stores: tuple = ()           # this path's stores outside loops, for store-to-load forwarding
    entered_loop: bool = False
    recording: bool = True           # False while a loop body is only being summarised
    guard_pred: z3.BoolRef | None = None  # the predicate of the instruction being executed, if any
    barriers: tuple[int, ...] = ()   # lines of the barriers this path has passed
    in_body: bool = False            # inside a loop body (loops keeps the loops left behind, too)
    # barriers passed in completed iterations of loops with barriers (k·b per loop), None when there are none
    phase_extra: z3.BitVecRef | None = None
    # in a loop body: (its iteration, barriers passed before the loop, the generic run's iteration symbol naming
    # the loop's shared-read placeholders, `memory._loop_read`)
    generic: tuple | None = None
    # register -> the condition under which it holds no value (a first definition under a predicate), or
    # None when that condition is not modelled (a predicated first definition in a loop, read after it); a
    # register absent here is defined wherever it is in `regs`
    undefined: dict[str, z3.BoolRef | None] = field(default_factory=dict)
    line: int = 0                    # the PTX line of the instruction being executed
    # cp.async copies in flight: (uncommitted copies, committed groups not yet waited for), `async_copy`
    copies: tuple[int, int] = (0, 0)

    def copy(self) -> ThreadState:
        return ThreadState(self.ctx, dict(self.regs), list(self.path), self.loops, self.own_stores,
                           self.entered_loop, self.recording, None, self.barriers, self.in_body, self.phase_extra,
                           self.generic, dict(self.undefined), self.line, self.copies)

    def phase_term(self) -> z3.BitVecRef | None:
        """The number of barriers this thread has passed, when loops with barriers make it symbolic."""
        if self.phase_extra is None:
            return None
        return z3.simplify(self.phase_extra + len(self.barriers))

    @property
    def phase(self) -> int:
        return len(self.barriers)

    def opaque(self, like: z3.ExprRef, why: str) -> z3.ExprRef:
        """A value this model does not compute (it comes from other threads): any property that depends on
        it is unknown, with `why` as the reason."""
        name = f"opaque!{self.ctx.fresh()}"
        self.ctx.opaque[name] = why
        return z3.Const(name, like.sort())

    # ------------------------------------------------------------ bookkeeping

    def use_axiom(self, name: str) -> None:
        self.ctx.axioms.add(name)

    def assume(self, fact: z3.BoolRef) -> None:
        if not any(z3.eq(fact, a) for a in self.ctx.assumptions):
            self.ctx.assumptions.append(fact)

    def condition(self) -> z3.BoolRef:
        conds = list(self.path) + ([self.guard_pred] if self.guard_pred is not None else [])
        return z3.And(conds) if conds else z3.BoolVal(True)

    # ------------------------------------------------------------ reading operands

    def reg(self, name: str) -> Value:
        if name in self.regs:
            if name in self.undefined:
                self.note_undefined(name, self.undefined[name])
            return self.regs[name]
        if name in self.ctx.special:
            return self.ctx.special[name]
        raise Unsupported(f"register `{name}` read before any write, or a special register not modelled")

    def note_undefined(self, name: str, when: z3.BoolRef | None) -> None:
        """Record a read of `name` that finds no value when `when` holds; `registers.check` asks whether a
        thread can get there."""
        if when is None:
            raise Unsupported(f"register `{name}`, defined under a predicate inside a loop, read after the loop")
        if self.recording and not z3.is_false(when):
            self.ctx.undefined_reads.append(UndefinedRead(name, z3.And(self.condition(), when), self.loops,
                                                          self.line))

    def undefined_value(self, name: str, ty: PtxType) -> z3.ExprRef:
        """The value of a register no path has defined: any value, and the read is recorded. In a loop body the
        register may hold the previous iteration's value, which the loop summary does not track here."""
        if self.in_body:
            raise Unsupported(f"register `{name}` read before any write in a loop body")
        self.note_undefined(name, z3.BoolVal(True))
        sort = z3.BoolSort() if ty.kind == "pred" else z3.RealSort() if ty.is_float else z3.BitVecSort(ty.bits)
        return z3.Const(f"undefined.{name}!{self.ctx.fresh()}", sort)

    def read_raw(self, op) -> Value:
        if isinstance(op, Reg):
            return self.reg(op.name)
        raise Unsupported(f"operand {op!r} where a register was expected")

    def read(self, op, ty: PtxType) -> z3.ExprRef:
        """The operand as the instruction's type expects it: Bool, bit-vector of ty.bits, or real. A float
        that may be a lane's -inf padding is refused: only the rules of `semantics.ptx.neginf`, through
        `read_padded`, compute with it."""
        value = self.read_padded(op, ty)
        if ty.is_float and self.ctx.marks(value):
            raise Unsupported("-inf (a masked lane's padding) reaches an operation with no exact rule for it")
        return value

    def read_padded(self, op, ty: PtxType) -> z3.ExprRef:
        """`read`, letting a value that holds the -inf marker through (for `semantics.ptx.neginf`'s rules)."""
        if isinstance(op, IntImm):
            return _int_immediate(op.value, ty)
        if isinstance(op, FloatImm):
            if ty.is_float:
                return real_of_bits(op.bits, op.width)
            return z3.BitVecVal(op.bits, ty.bits)
        if isinstance(op, Sym) and op.name in CONSTANT_SYMBOLS:
            return _int_immediate(CONSTANT_SYMBOLS[op.name], ty)
        if isinstance(op, Reg) and op.name not in self.regs and op.name not in self.ctx.special:
            return self.undefined_value(op.name, ty)
        return coerce(self.read_raw(op), ty)

    def read_data(self, op, ty: PtxType) -> Value:
        """An operand of a data-movement instruction (mov, selp, st): any kind passes unchanged."""
        if isinstance(op, Reg):
            if op.name not in self.regs and op.name not in self.ctx.special:
                return self.undefined_value(op.name, ty)
            return self.read_raw(op)
        if isinstance(op, FloatImm):
            return real_of_bits(op.bits, op.width)
        if isinstance(op, Sym) and op.name in self.ctx.buffers:
            return Pointer(self.ctx.buffers[op.name].role, op.name, z3.BitVecVal(0, 64))
        return self.read(op, ty)

    def is_pointer(self, *ops) -> bool:
        return any(isinstance(op, Reg) and isinstance(self.regs.get(op.name), Pointer) for op in ops)

    def pointer_arith(self, opcode: str, a_op, b_op, ty: PtxType) -> Pointer:
        a, b = self.read_raw(a_op) if isinstance(a_op, Reg) else None, \
            self.read_raw(b_op) if isinstance(b_op, Reg) else None
        if isinstance(a, Pointer) and not isinstance(b, Pointer):
            delta = self.read(b_op, ty)
            return a.moved(delta if opcode == "add" else -delta)
        if isinstance(b, Pointer) and opcode == "add":
            return b.moved(self.read(a_op, ty))
        raise Unsupported(f"`{opcode}` of two pointers")

    # ------------------------------------------------------------ writing

    def write(self, dst, value: Value) -> None:
        if isinstance(dst, Sym) and dst.name == "_":
            return
        if not isinstance(dst, Reg):
            raise Unsupported(f"destination {dst!r}")
        if self.guard_pred is not None and dst.name not in self.regs:
            # A first definition under a predicate: where the predicate is false the register holds nothing,
            # and a read there is a finding (`registers.check`). Where it is read defined, it holds `value`.
            self.undefined[dst.name] = z3.Not(self.guard_pred)
        elif self.guard_pred is not None:
            # A predicated write keeps the old value where the predicate is false.
            if dst.name in self.undefined:
                self.undefined[dst.name] = z3.And(self.undefined[dst.name], z3.Not(self.guard_pred))
            value = self.select(self.guard_pred, value, self.regs[dst.name])
            if isinstance(value, z3.ExprRef) and z3.is_real(value) and self.ctx.marks(value):
                # a padded lane whose mask is always true on this path holds its loaded value
                value = neginf.settle(self, value, z3.And(self.path) if self.path else z3.BoolVal(True),
                                      "a register merge")
        else:
            self.undefined.pop(dst.name, None)
        self.regs[dst.name] = value

    def write_pair(self, dst, value: z3.BoolRef, negated: z3.BoolRef) -> None:
        """setp's `p|q` destination writes the comparison and its negation."""
        if isinstance(dst, Vec):
            self.write(dst.elems[0], value)
            self.write(dst.elems[1], negated)
        else:
            self.write(dst, value)

    def select(self, cond: z3.BoolRef, a: Value, b: Value) -> Value:
        """If(cond, a, b) across value kinds, converting float bit-pattern constants to reals."""
        if isinstance(a, Pointer) or isinstance(b, Pointer):
            if isinstance(a, Pointer) and isinstance(b, Pointer) and (a.space, a.buffer) == (b.space, b.buffer):
                return Pointer(a.space, a.buffer, z3.If(cond, a.offset, b.offset))
            raise Unsupported("selection between pointers into different buffers")
        if a.sort() != b.sort():
            a, b = _unify(a, b)
        return z3.If(cond, a, b)


def _int_immediate(value: int, ty: PtxType) -> z3.ExprRef:
    if ty.kind == "pred":
        return z3.BoolVal(bool(value))
    if ty.is_float:
        return z3.RealVal(value)
    return z3.BitVecVal(value % (1 << ty.bits), ty.bits)


def _unify(a: z3.ExprRef, b: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
    """Make a real and a constant bit pattern comparable by reading the pattern as a float."""
    def as_real(v: z3.ExprRef) -> z3.ExprRef:
        if z3.is_real(v):
            return v
        if z3.is_bv_value(v) and v.size() in (16, 32, 64):
            return real_of_bits(v.as_long(), v.size())
        raise Unsupported("a register holds a float on one path and integer bits on another")
    if z3.is_real(a) or z3.is_real(b):
        return as_real(a), as_real(b)
    raise Unsupported(f"values of sorts {a.sort()} and {b.sort()} merged")


def coerce(v: Value, ty: PtxType) -> z3.ExprRef:
    if isinstance(v, Pointer):
        raise Unsupported("a pointer used as a plain integer (provenance would be lost)")
    if ty.kind == "pred":
        if not z3.is_bool(v):
            raise Unsupported("a non-predicate register used as a predicate")
        return v
    if ty.is_float:
        if z3.is_real(v):
            return v
        if z3.is_bv_value(v):
            return real_of_bits(v.as_long() % (1 << ty.bits), ty.bits)
        raise Unsupported("integer bits reinterpreted as a float")
    if z3.is_real(v):
        raise Unsupported("float bits used in integer arithmetic")
    if z3.is_bool(v):
        raise Unsupported("a predicate used as an integer")
    w = v.size()
    if w == ty.bits:
        return v
    if w > ty.bits:
        return z3.Extract(ty.bits - 1, 0, v)
    return (z3.SignExt if ty.signed else z3.ZeroExt)(ty.bits - w, v)


def address_of(state: ThreadState, op, ins: Instr) -> Pointer:
    """The pointer an address operand `[base+off]` denotes."""
    if not isinstance(op, Addr):
        raise Unsupported(f"address operand {op!r}", f"line {ins.line}")
    if isinstance(op.base, Sym):
        if op.base.name in state.ctx.buffers:
            return Pointer(state.ctx.buffers[op.base.name].role, op.base.name, z3.BitVecVal(op.offset, 64))
        raise Unsupported(f"address of `{op.base.name}`", f"line {ins.line}")
    base = state.read_raw(op.base)
    if not isinstance(base, Pointer):
        raise Unsupported("memory access through an address not derived from a kernel pointer parameter",
                          f"line {ins.line}")
    return base.moved(z3.BitVecVal(op.offset, 64)) if op.offset else base
