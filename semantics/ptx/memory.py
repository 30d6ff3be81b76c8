"""Loads, stores and address conversions: where a thread's accesses are recorded.

Global memory is a set of separate allocations. A load of an input buffer reads its universally
quantified contents (a function of the element index); a load of a buffer the kernel writes sees this
thread's own earlier stores first. What other threads write is the business of the race check, which
makes a conflicting read a finding rather than a value.
"""

from __future__ import annotations

import z3

from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.ast import Instr, Reg, Sym, Vec
from semantics.ptx.machine import simplify
from semantics.ptx.state import Access, LoopRead, ReadBack, SharedRead, ThreadState, address_of, coerce
from semantics.ptx.types import TYPES, types_in

SPACES = {".global": "global", ".shared": "shared", ".local": "local", ".param": "param", ".const": "const"}
# Cache and ordering hints do not change what a race-free access reads or writes.
HINTS = frozenset({".nc", ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt", ".weak", ".relaxed", ".volatile",
                   ".cta", ".gpu", ".sys"})
VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}


def _shape(ins: Instr) -> tuple[str | None, int, object]:
    """(space, vector length, element type) of an ld/st, refusing modifiers it does not know."""
    space = next((SPACES[m] for m in ins.mods if m in SPACES), None)
    n = next((VECTORS[m] for m in ins.mods if m in VECTORS), 1)
    for m in ins.mods:
        known = m in SPACES or m in VECTORS or m in HINTS or m in TYPES or m.startswith((".L1::", ".L2::"))
        if not known:
            raise Unsupported(f"modifier `{m}` of `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    (ty,) = types_in(ins.mods)
    return space, n, ty


def _elements(op) -> list:
    return list(op.elems) if isinstance(op, Vec) else [op]


def load(state: ThreadState, ins: Instr) -> None:
    space, n, ty = _shape(ins)
    dst, addr = ins.operands
    if space == "param":
        if not isinstance(addr.base, Sym) or addr.base.name not in state.ctx.params or n != 1 or addr.offset:
            raise Unsupported(f"parameter load `{addr}`", f"line {ins.line}")
        state.write(dst, state.ctx.params[addr.base.name])
        return
    ptr = address_of(state, addr, ins)
    _check_space(space, ptr.space, ins)
    values = _access(state, ins, "load", ptr, n, ty.bytes, ())
    for d, v in zip(_elements(dst), values, strict=True):
        state.write(d, v)


def store(state: ThreadState, ins: Instr) -> None:
    space, n, ty = _shape(ins)
    addr, src = ins.operands
    ptr = address_of(state, addr, ins)
    _check_space(space, ptr.space, ins)
    buffer = state.ctx.buffers[ptr.buffer]
    if buffer.role == "shared":  # untyped bytes: a value keeps its own kind (Triton stores floats as .b32)
        values = tuple(state.read_data(s, ty) for s in _elements(src))
    else:
        values = tuple(_stored_value(state, s, ty, buffer.is_float) for s in _elements(src))
    if len(values) != n:
        raise Unsupported(f"vector store of {len(values)} values with `.v{n}`", f"line {ins.line}")
    values = tuple(_finite(state, v, ins) for v in values)
    _access(state, ins, "store", ptr, n, ty.bytes, values)


def _finite(state: ThreadState, value, ins: Instr):
    """A stored value, with a masked lane's -inf padding dropped where the store's own condition proves the
    lane unmasked (a masked-off store stores nothing); a store that may store -inf is refused."""
    if not isinstance(value, z3.ExprRef) or not z3.is_real(value):
        return value
    value = neginf.settle(state, value, state.condition(), f"the store at line {ins.line}",
                          neginf.STORE_SETTLE_TIMEOUT_MS)
    neginf.refuse_stored(state, value, f"line {ins.line}")
    return value


def cvta(state: ThreadState, ins: Instr) -> None:
    """cvta[.to].space: generic <-> state-space addresses. Pointers keep their provenance either way."""
    dst, src = ins.operands
    value = state.read_data(src, TYPES[".u64"])
    if not hasattr(value, "buffer"):
        raise Unsupported("cvta of a value that is not a kernel pointer", f"line {ins.line}")
    state.write(dst, value)


def _check_space(space: str | None, actual: str, ins: Instr) -> None:
    if space not in (None, actual):
        raise Unsupported(f"`{ins.opcode}.{space}` through a {actual} pointer", f"line {ins.line}")
    if actual not in ("global", "shared"):
        raise Unsupported(f"{actual} memory", f"line {ins.line}")


def _stored_value(state: ThreadState, op, ty, is_float: bool) -> z3.ExprRef:
    value = state.read_data(op, ty) if isinstance(op, Reg) else state.read(op, ty)
    target = TYPES[f".f{ty.bits}"] if is_float and ty.bits in (16, 32, 64) else ty
    return coerce(value, target)


def _access(state: ThreadState, ins: Instr, kind: str, ptr, n: int, elem_bytes: int, values: tuple,
            op: str = "") -> list:
    """Record the access and return the loaded element values (loads)."""
    buffer = state.ctx.buffers[ptr.buffer]
    if buffer.role == "opaque":
        raise Unsupported(f"an access through compiler-internal parameter `{buffer.name}`", f"line {ins.line}")
    if buffer.role not in ("shared", "null") and elem_bytes != buffer.elem_bytes:
        raise Unsupported(f"{elem_bytes}-byte elements accessed in `{buffer.name}` ({buffer.dtype})",
                          f"line {ins.line}")
    done = record(state, ins, kind, ptr, n, elem_bytes, values, op)
    shift = elem_bytes.bit_length() - 1
    indices = [simplify(z3.LShR(ptr.offset + j * elem_bytes, shift)) for j in range(n)]
    if kind == "store" and not state.loops:
        guard = state.condition()
        state.own_stores = state.own_stores + tuple(
            (buffer.name, i, v, guard, state.phase) for i, v in zip(indices, values, strict=True))
    if kind != "load":
        return []  # (an atomic's old value depends on the order of atomics: the caller makes it opaque)
    sort = z3.RealSort() if _holds_floats(buffer, ins) else z3.BitVecSort(elem_bytes * 8)
    if buffer.role not in ("input", "shared", "null") and state.entered_loop:
        return [_read_back(state, buffer, lane, ins, sort, done) for lane in range(n)]
    return [_read_element(state, buffer, i, ins, sort, elem_bytes) for i in indices]


def record(state: ThreadState, ins: Instr, kind: str, ptr, n: int, elem_bytes: int, values: tuple,
           op: str = "") -> Access | None:
    """Record the access (in the real pass; a loop's generic run records nothing) and return it."""
    if not state.recording:
        return None
    done = Access(kind, ptr.space, ptr.buffer, ptr.offset, n * elem_bytes, elem_bytes, values, state.condition(),
                  state.loops, ins.line, ins.loc, state.phase, state.phase_term(), op)
    state.ctx.accesses.append(done)
    return done


def _holds_floats(buffer, ins: Instr) -> bool:
    if buffer.role == "shared":
        return any(TYPES[m].is_float for m in ins.mods if m in TYPES)
    return buffer.is_float


def _read_element(state: ThreadState, buffer, index: z3.BitVecRef, ins: Instr, sort, elem_bytes: int) -> z3.ExprRef:
    """What a load sees. Before any barrier, a race-free thread sees the buffer's initial contents or its
    own stores; after one, other threads of the block may have written the element, and their values
    are not modelled here (an opaque value makes dependent properties unknown)."""
    if buffer.role == "null":   # out of bounds (memory_safety reports it): the value is none of the model's
        return state.opaque(z3.Const("v", sort), f"a load through the null pointer (line {ins.line})")
    if buffer.role == "input":
        return buffer.contents()(index)
    if buffer.role != "shared" and any(a.kind == "atomic" and a.buffer == buffer.name for a in state.ctx.accesses):
        # an atomic of this thread may have changed it (other threads' are races or a barrier away)
        return state.opaque(z3.Const("v", sort), f"a read of `{buffer.name}` after atomics on it (line {ins.line})")
    if buffer.role == "shared" and state.generic is not None and len(state.barriers) > state.generic[1]:
        return _loop_read(state, buffer, index, ins, sort, elem_bytes)
    if buffer.role == "shared" and state.phase > 0 and not state.in_body and state.recording \
            and state.phase_extra is None:
        value = _pending_shared_read(state, buffer, index, ins, sort, elem_bytes)
    elif buffer.role == "shared" and state.phase > 0 and state.phase_extra is None and state.generic is not None \
            and state.generic[3]:
        value = _interval_read(state, buffer, index, ins, sort, elem_bytes)
    elif buffer.role == "shared" and (state.in_body or state.phase_extra is not None) and state.barriers:
        kind = _shared_sort(state, buffer, sort, elem_bytes)   # (what was stored there: reals through .b32)
        value = state.opaque(z3.Const("v", kind), f"values read from shared memory in or after a loop with barriers "
                                                  f"({buffer.name}, line {ins.line}) are not resolved to their "
                                                  f"writers yet")
    elif buffer.role == "shared" or state.phase > 0:
        value = state.opaque(z3.Const("v", sort), f"values written by other threads of a block "
                                                  f"({buffer.name}, line {ins.line}) are not modelled yet")
    else:
        value = _initial(buffer, index)
    for name, i, v, guard, phase in state.own_stores:
        # (with barriers in a loop, equal counts of barrier lines do not mean the same phase: no forwarding)
        if name == buffer.name and phase == state.phase and state.phase_extra is None:
            value = z3.If(z3.And(guard, i == index), v, value)
    return value


def _read_back(state: ThreadState, buffer, lane: int, ins: Instr, sort, record: Access | None) -> z3.ExprRef:
    """A global buffer the kernel writes, read in a loop body or after a loop: a placeholder
    `readback(block and thread ids, iteration)` (`ReadBack`), defined once every store is known by
    `semantics.properties.readbacks` (this thread's own earlier store, or opaque). One function per load lane
    and loop execution: the generic run and the real pass of one loop name it alike (`state.generic`'s third
    entry), so that an accumulation over the read becomes a comprehension over it. Only a read at most one
    loop deep whose barrier count is a number (no barriers in a loop before it) is modelled."""
    where = f"line {ins.line}"
    if state.phase_extra is not None:
        raise Unsupported(f"a read of written buffer `{buffer.name}` after a loop with barriers", where)
    coordinates = state.ctx.thread.variables()
    if state.generic is not None and len(state.loops) == 1:   # a loop body (its generic run or its real pass)
        iteration, _, key, _ = state.generic
        name, args = f"readback!{buffer.name}!{ins.line}.{lane}!{key}", [*coordinates, iteration]
    elif state.generic is None and not state.loops and state.recording:
        name, args = f"readback!{buffer.name}!{ins.line}.{lane}!{state.ctx.fresh()}", coordinates
    else:
        raise Unsupported(f"a read of written buffer `{buffer.name}` in a nested loop or after a loop whose exit "
                          "is not proved", where)
    read = state.ctx.readbacks.get(name)
    if read is None:
        func = z3.Function(name, *[a.sort() for a in args], sort)
        read = state.ctx.readbacks[name] = ReadBack(func, buffer.name, ins.line, lane)
    if record is not None:
        read.records.append(record)
    return read.func(*args)


def _pending_shared_read(state: ThreadState, buffer, index: z3.BitVecRef, ins: Instr, sort,
                         elem_bytes: int) -> z3.ExprRef:
    """A value another thread of the block wrote before a barrier: a placeholder now, resolved after the
    whole kernel is explored (every path's stores are known then) by `semantics.properties.shared_values`."""
    sort = _shared_sort(state, buffer, sort, elem_bytes)
    # A function of the reading thread's coordinates, so that a shuffle handing the value to another lane
    # (which substitutes that lane's tid) names that lane's read.
    coordinates = state.ctx.thread.variables()
    read = z3.Function(f"shared!{ins.line}!{len(state.ctx.shared_reads)}", *[c.sort() for c in coordinates], sort)
    symbol = read(*coordinates)
    state.ctx.shared_reads.append(SharedRead(symbol, buffer.name, simplify(index * elem_bytes), elem_bytes,
                                             state.phase, state.condition(), ins.line))
    return symbol


def _interval_read(state: ThreadState, buffer, index: z3.BitVecRef, ins: Instr, sort,
                   elem_bytes: int) -> z3.ExprRef:
    """A shared read in the body of a loop without barriers (a loop nest, when every loop of it has none), after a
    barrier and after no loop with barriers: the placeholder `f(reader coordinates, byte offset)`, one function
    per buffer and barrier interval. Its index may speak of the loop's iteration (the generic run's header
    symbols, the real pass's k, a comprehension's bound variable), so the placeholder takes the offset as an
    argument instead of standing for one read: the generic run and the real pass then read the same term, and
    an accumulation over the reads becomes a comprehension over f(..., o(j)). `semantics.properties.shared_values`
    defines f by the offset's last writer in an earlier interval, as it resolves a read outside loops; a store
    of this interval in a loop makes it opaque there (`shared_values.unforwarded_intervals`)."""
    sort = _shared_sort(state, buffer, sort, elem_bytes)
    name = f"shared_at!{buffer.name}!{state.phase}!{elem_bytes}!{sort}"
    coordinates = state.ctx.thread.variables()
    read = next((r for r in state.ctx.shared_reads if r.symbol.decl().name() == name), None)
    if read is None:
        offset = z3.BitVec(f"offset!{name}", 64)
        func = z3.Function(name, *[c.sort() for c in coordinates], offset.sort(), sort)
        read = SharedRead(func(*coordinates, offset), buffer.name, offset, elem_bytes, state.phase, z3.BoolVal(True),
                          ins.line)
        state.ctx.shared_reads.append(read)
    return read.symbol.decl()(*coordinates, simplify(index * elem_bytes))


def _shared_sort(state: ThreadState, buffer, sort, elem_bytes: int):
    """An untyped (.b32) shared load reads whatever kind of value was stored: Triton moves floats through
    shared memory as .b32. The placeholder takes the kind of the earlier stores to the buffer when they
    all stored reals; resolution checks the kinds agree (a mismatch leaves the read opaque)."""
    stored = [v for a in state.ctx.accesses if a.space == "shared" and a.kind == "store"
              and a.buffer == buffer.name and a.elem_bytes == elem_bytes for v in a.values]
    if stored and all(z3.is_real(v) for v in stored):
        return z3.RealSort()
    return sort


def _loop_read(state: ThreadState, buffer, index: z3.BitVecRef, ins: Instr, sort, elem_bytes: int) -> z3.ExprRef:
    """A shared read after a barrier of a loop body: a placeholder `R(iteration, byte offset)`, one function per
    buffer and loop, so that every path of the generic run (which summarises the loop) reads the same term and an
    accumulation over it is recognised; the real pass reads R at its iteration k, the same value. R is resolved
    to the same-iteration writer's value (or made opaque) by `semantics.properties.loop_shared` once every
    store is known."""
    iteration, base, key, _ = state.generic
    name = f"shared_loop!{key}!{buffer.name}!{sort}"
    read = state.ctx.loop_reads.get(name)
    if read is None or read.elem_bytes != elem_bytes:
        if read is not None:
            raise Unsupported(f"shared buffer `{buffer.name}` read with two element widths in one loop",
                              f"line {ins.line}")
        func = z3.Function(name, z3.BitVecSort(64), z3.BitVecSort(64), sort)
        read = state.ctx.loop_reads[name] = LoopRead(func, buffer.name, elem_bytes, key)
    read.lines.add(ins.line)
    read.segments.add(len(state.barriers) - base)
    return read.func(iteration, simplify(index * elem_bytes))


def _initial(buffer, index: z3.BitVecRef) -> z3.ExprRef:
    if buffer.init in ("zeros", "ones"):
        one = 1 if buffer.init == "ones" else 0
        return z3.RealVal(one) if buffer.is_float else z3.BitVecVal(one, buffer.elem_bytes * 8)
    return buffer.contents()(index)


MEMORY = {"ld": load, "ldu": load, "st": store, "cvta": cvta}
