"""Concrete meanings of loads, stores, atomics and address conversions.

Addresses are pointers with provenance (`values.Ptr`): a kernel parameter bound to a buffer, or a shared or
local variable's name, moved by integer arithmetic. Every access is bounds- and alignment-checked against
the allocation it came from (`memory.Memory`), recorded, and checked for races.
"""

from __future__ import annotations

from collections.abc import Callable

from semantics.errors import Unsupported
from semantics.ptx.ast import Addr, Instr, Sym
from semantics.ptx.types import TYPES, PtxType, types_in

from .alu import INT_BINARY, _fmax, _fmin, _sv
from .operands import data_reader, elements, reader, writer
from .values import MPF, Ptr, mask

Step = Callable[[object], int]
SPACES = {".global": "global", ".shared": "shared", ".local": "local", ".param": "param", ".const": "const"}
HINTS = frozenset({".nc", ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt", ".weak", ".relaxed", ".volatile",
                   ".cta", ".gpu", ".sys", ".acquire", ".release", ".acq_rel", ".noftz"})
VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}


def _shape(ins: Instr) -> tuple[str | None, int, PtxType]:
    space = next((SPACES[m] for m in ins.mods if m in SPACES), None)
    n = next((VECTORS[m] for m in ins.mods if m in VECTORS), 1)
    for m in ins.mods:
        if not (m in SPACES or m in VECTORS or m in HINTS or m in TYPES or m.startswith((".L1::", ".L2::"))):
            raise Unsupported(f"modifier `{m}` of `{ins.opcode}{''.join(ins.mods)}`")
    types = types_in(ins.mods)
    if len(types) != 1:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` with {len(types)} types")
    return space, n, types[0]


def address(p, op, space: str | None) -> Callable[[dict], Ptr]:
    """The pointer an address operand `[base+offset]` denotes, checked against the instruction's space."""
    if not isinstance(op, Addr):
        raise Unsupported(f"address operand {op!r}")
    offset = op.offset
    if isinstance(op.base, Sym):
        if op.base.name not in p.variables:
            raise Unsupported(f"address of `{op.base.name}`")
        pointer = Ptr(p.variables[op.base.name], op.base.name, offset)
        _check_space(space, pointer.space)
        return lambda r: pointer
    name = op.base.name
    p.regs.width(op.base)

    def get(r: dict) -> Ptr:
        base = r[name]
        if type(base) is not Ptr:
            raise Unsupported("a memory access through an address not derived from a kernel pointer or variable")
        if space is not None and base.space != space:
            _check_space(space, base.space)
        return base.moved(offset) if offset else base
    return get


def _check_space(space: str | None, actual: str) -> None:
    if space not in (None, actual):
        raise Unsupported(f"a `.{space}` access through a {actual} pointer")


def load(p, ins: Instr, nxt: int) -> Step:
    space, n, ty = _shape(ins)
    dst, addr = ins.operands
    if space == "param":
        return _param_load(p, ins, nxt, ty)
    if space == "const":
        raise Unsupported("constant memory")
    where, mem, line, eb = address(p, addr, space), p.memory, ins.line, ty.bytes
    puts = [writer(p.regs, d, ty) for d in elements(dst)]
    if len(puts) != n:
        raise Unsupported(f"a vector load into {len(puts)} registers with `.v{n}`")

    def step(t) -> int:
        r = t.regs
        ptr = where(r)
        values = mem.load_global(t, ptr, n, eb, line) if ptr.space == "global" else \
            mem.load_cells(t, ptr, n, eb, line)
        for put, v in zip(puts, values, strict=True):
            put(r, v)
        return nxt
    return step


def _param_load(p, ins: Instr, nxt: int, ty: PtxType) -> Step:
    dst, addr = ins.operands
    if not isinstance(addr, Addr) or not isinstance(addr.base, Sym) or addr.base.name not in p.params \
            or addr.offset or isinstance(dst, tuple):
        raise Unsupported(f"parameter load `{addr}`")
    value, put = p.params[addr.base.name], writer(p.regs, dst, ty)
    if type(value) is int:
        value &= mask(ty.bits)

    def step(t) -> int:
        put(t.regs, value)
        return nxt
    return step


def store(p, ins: Instr, nxt: int) -> Step:
    space, n, ty = _shape(ins)
    addr, src = ins.operands
    if space in ("param", "const"):
        raise Unsupported(f"a store to {space} memory")
    where, mem, line, eb = address(p, addr, space), p.memory, ins.line, ty.bytes
    getters = [data_reader(p.regs, s, ty, p.variables) for s in elements(src)]
    if len(getters) != n:
        raise Unsupported(f"a vector store of {len(getters)} values with `.v{n}`")
    low = mask(ty.bits)

    def step(t) -> int:
        r = t.regs
        ptr = where(r)
        values = [v & low if type(v) is int else v for v in (g(r) for g in getters)]
        if ptr.space == "global":
            mem.store_global(t, ptr, values, eb, line)
        else:
            mem.store_cells(t, ptr, values, eb, line)
        return nxt
    return step


def cvta(p, ins: Instr, nxt: int) -> Step:
    """cvta[.to].space: generic <-> state-space addresses; a pointer keeps its provenance either way."""
    dst, src = ins.operands
    g, put = data_reader(p.regs, src, TYPES[".u64"], p.variables), writer(p.regs, dst, TYPES[".u64"])

    def step(t) -> int:
        r = t.regs
        v = g(r)
        if type(v) is not Ptr:
            raise Unsupported("cvta of a value that is not a kernel pointer or variable address")
        put(r, v)
        return nxt
    return step


# ---------------------------------------------------------------- atomics


def _int_op(name: str) -> Callable:
    fn = INT_BINARY[name]
    return lambda old, b, c, w, s: fn(old, b, w, s) & mask(w)


ATOMIC_INT: dict[str, Callable] = {
    **{name: _int_op(name) for name in ("add", "min", "max", "and", "or", "xor")},
    "exch": lambda old, b, c, w, s: b,
    "cas": lambda old, b, c, w, s: c if old == b else old,
    "inc": lambda old, b, c, w, s: 0 if old >= b else (old + 1) & mask(w),
    "dec": lambda old, b, c, w, s: b if old == 0 or old > b else old - 1,
}
ATOMIC_FLOAT: dict[str, Callable] = {
    "add": lambda old, b, c: old + b,
    "min": lambda old, b, c: _fmin(old, b),
    "max": lambda old, b, c: _fmax(old, b),
    "exch": lambda old, b, c: b,
    "cas": lambda old, b, c: c if old == b else old,
}


def atomic(p, ins: Instr, nxt: int) -> Step:
    """atom (returns the old value) / red: a read-modify-write of one element, recorded as an atomic access."""
    ops = [m for m in ins.mods if m.lstrip(".") in ATOMIC_INT]
    known = set(SPACES) | HINTS | set(TYPES) | {m for m in ops}
    if len(ops) != 1 or any(m not in known for m in ins.mods):
        raise Unsupported(f"atomic `{ins.opcode}{''.join(ins.mods)}`")
    op = ops[0].lstrip(".")
    (ty,) = types_in(ins.mods)
    space = next((SPACES[m] for m in ins.mods if m in SPACES), None)
    if ins.opcode == "atom":
        dst, addr, *srcs = ins.operands
    else:
        dst, (addr, *srcs) = None, ins.operands
    if len(srcs) != (2 if op == "cas" else 1):
        raise Unsupported(f"atomic `{ins.opcode}{''.join(ins.mods)}` with {len(srcs)} operands")
    if ty.is_float and op not in ATOMIC_FLOAT:
        raise Unsupported(f"atomic `{op}` on floats")
    where, mem, line, eb = address(p, addr, space), p.memory, ins.line, ty.bytes
    getters = [data_reader(p.regs, s, ty, p.variables) if ty.kind == "bits" else reader(p.regs, s, ty)
               for s in srcs]
    put = writer(p.regs, dst, ty) if dst is not None else None
    w, s = ty.bits, ty.signed
    combine = (lambda old, b, c: ATOMIC_FLOAT[op](old, b, c)) if ty.is_float else \
        (lambda old, b, c: ATOMIC_INT[op](old, b, c, w, s))

    def step(t) -> int:
        r = t.regs
        ptr = where(r)
        b = getters[0](r)
        c = getters[1](r) if len(getters) > 1 else None
        if ptr.space == "global":
            mem.global_buffer(t, ptr, eb, eb, "atomic", line)
            old = mem.current_global(ptr, eb)
            new = combine(_as(old, ty), b, c)
            mem.store_global(t, ptr, [new], eb, line, kind="atomic")
        elif ptr.space == "shared":
            old = mem.current_cell(t, ptr, eb, line)
            new = combine(_as(old, ty), b, c)
            mem.store_cells(t, ptr, [new], eb, line, kind="atomic")
        else:
            raise Unsupported(f"atomics on {ptr.space} memory")
        if put is not None:
            put(r, old)
        return nxt
    return step


def _as(value: object, ty: PtxType) -> object:
    """An element's current value as the atomic's type reads it."""
    if ty.is_float:
        if type(value) is not MPF:
            raise Unsupported(f"a float atomic on an element holding {type(value).__name__}")
        return value
    if type(value) is not int:
        raise Unsupported(f"an integer atomic on an element holding {type(value).__name__}")
    return value & mask(ty.bits) if not ty.signed else _sv(value, ty.bits, True) & mask(ty.bits)


def async_copy(p, ins: Instr, nxt: int) -> Step:
    """cp.async [dst], [src], size{, src-size}: `size` bytes from global to shared, zeros past src-size. Run at
    once: one schedule the hardware may choose (the symbolic model requires the copy done by the thread's next
    barrier, `semantics/ptx/async_copy.py`); so commit_group and wait_group have nothing left to do."""
    rest = ins.mods[1:] if ins.mods[:1] == (".async",) else None
    if rest in ((".commit_group",), (".wait_group",), (".wait_all",)):
        return lambda t: nxt
    if rest is None or ".shared" not in rest and ".shared::cta" not in rest or ".global" not in rest \
            or len(ins.operands) not in (3, 4):
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}`")
    dst_op, src_op, size_op = ins.operands[:3]
    size = size_op.value
    to, where, mem, line = address(p, dst_op, "shared"), address(p, src_op, "global"), p.memory, ins.line
    given = reader(p.regs, ins.operands[3], TYPES[".u32"]) if len(ins.operands) == 4 else (lambda r: size)

    def step(t) -> int:
        r = t.regs
        src, count = where(r), given(r)
        eb = mem.globals[src.buffer].buffer.elem_bytes
        if count not in (0, size) or size % eb:
            raise Unsupported(f"cp.async of {count} of {size} bytes")
        zero = MPF(0) if mem.globals[src.buffer].buffer.is_float else 0
        values = mem.load_global(t, src, size // eb, eb, line) if count else [zero] * (size // eb)
        mem.store_cells(t, to(r), values, eb, line)
        return nxt
    return step


MEMORY: dict[str, Callable] = {"ld": load, "ldu": load, "st": store, "cvta": cvta, "atom": atomic, "red": atomic,
                               "cp": async_copy}
