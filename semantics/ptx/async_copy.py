"""Asynchronous copies into shared memory (Triton's software pipelining, `num_stages` > 1) and `ldmatrix`.

`cp.async.{ca,cg}.shared.global [dst], [src], size{, src-size}` copies `size` bytes from global `src` to
shared `dst`, filling with zeros past `src-size` bytes (PTX ISA, cp.async). It completes asynchronously: only
once the thread has committed it to a group (`cp.async.commit_group`) and waited for that group
(`cp.async.wait_group N`: every group but the N most recent is done; `cp.async.wait_all`: every copy). The
model:

* the global read and the shared write are recorded as accesses at the instruction, in its barrier interval;
* every copy of the thread must be complete at its next barrier and when it exits (`require_done`): the write
  then lands inside that interval for every other thread of the block, so another thread's access to it in
  the interval is a race (the race check), and reads after the barrier see it (`shared_values`). A barrier
  passed with a copy in flight is not modelled (unknown): Triton's `num_stages = 2` waits before each
  barrier, a deeper pipeline keeps a group in flight across one;
* `src-size` is 0 or `size` (a masked lane: Triton's `other=0.0`): the global read happens only when it is
  `size`, and the value written is the global element, else 0. Any other `src-size` is not modelled;
* the copy is not a store of the thread's own for forwarding (`ThreadState.own_stores`): its own reads of the
  destination before the barrier may run before the copy lands, and stay unmodelled values.

`ldmatrix.sync.aligned.m8n8.x4.shared.b16 {d0..d3}, [a]`: each of the warp's 32 lanes gives the address of
one 16-byte row, and the four 8×8 matrices of 16-bit elements are handed out across the lanes. The rows a
warp reads are exactly those its lanes name, so the thread's access is recorded as its own 16-byte row read
(bounds, races); the values it receives come from other lanes' rows and are not modelled (opaque). The warp
must be converged there (a side condition, `KernelContext.warp_uniform`). `.x1` and `.x2` (only some lanes'
addresses used) are not modelled.
"""

from __future__ import annotations

import z3

from semantics.errors import Unsupported
from semantics.ptx.ast import Instr, IntImm, Vec
from semantics.ptx.memory import HINTS, _access, _check_space, record
from semantics.ptx.state import ThreadState, address_of
from semantics.ptx.types import TYPES

CACHING = frozenset({".ca", ".cg"})
SIZES = frozenset({4, 8, 16})


def copy(state: ThreadState, ins: Instr) -> None:
    """cp.async[.ca|.cg].shared[::cta].global[.L2 hints] [dst], [src], size{, src-size}."""
    where = f"line {ins.line}"
    if ins.mods[:1] != (".async",):
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}`", where)
    rest = ins.mods[1:]
    if rest in ((".commit_group",), (".wait_group",), (".wait_all",)):
        GROUPS[rest[0]](state, ins)
        return
    known = CACHING | HINTS | {".shared", ".shared::cta", ".global"}
    if not ({".shared", ".global"} <= set(rest) | ({".shared"} if ".shared::cta" in rest else set())) \
            or any(m not in known and not m.startswith(".L2::") for m in rest):
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}`", where)
    if len(ins.operands) not in (3, 4) or not isinstance(ins.operands[2], IntImm):
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` with these operands", where)
    dst_op, src_op, size_op = ins.operands[:3]
    size = size_op.value
    dst, src = address_of(state, dst_op, ins), address_of(state, src_op, ins)
    _check_space("shared", dst.space, ins)
    _check_space("global", src.space, ins)
    buffer = state.ctx.buffers[src.buffer]
    if size not in SIZES or size % buffer.elem_bytes:
        raise Unsupported(f"a {size}-byte cp.async of `{buffer.name}` ({buffer.dtype})", where)
    full = z3.BoolVal(True)
    if len(ins.operands) == 4:
        given = z3.simplify(state.read(ins.operands[3], TYPES[".u32"]))
        if not _zero_or(given, size):
            raise Unsupported(f"cp.async with a source size that may be other than 0 or {size} bytes", where)
        full = given == size
    n = size // buffer.elem_bytes
    outer = state.guard_pred
    state.guard_pred = z3.And(outer, full) if outer is not None else full
    try:
        loaded = _access(state, ins, "load", src, n, buffer.elem_bytes, ())
    finally:
        state.guard_pred = outer
    zero = z3.RealVal(0) if buffer.is_float else z3.BitVecVal(0, buffer.elem_bytes * 8)
    values = tuple(z3.If(full, v, zero) for v in loaded)
    record(state, ins, "store", dst, n, buffer.elem_bytes, values)
    state.copies = (state.copies[0] + 1, state.copies[1])


def _zero_or(term: z3.ExprRef, size: int) -> bool:
    """The term is 0 or `size` whatever its conditions: an If-tree (selp's) whose leaves are those numbers."""
    if z3.is_bv_value(term):
        return term.as_long() in (0, size)
    return z3.is_app_of(term, z3.Z3_OP_ITE) and all(_zero_or(t, size) for t in term.children()[1:])


def _commit(state: ThreadState, ins: Instr) -> None:
    """Every uncommitted copy becomes one group (an empty group when there is none)."""
    state.copies = (0, state.copies[1] + 1)


def _wait_group(state: ThreadState, ins: Instr) -> None:
    """At most N committed groups are left in flight; uncommitted copies are not waited for."""
    (count,) = ins.operands
    if not isinstance(count, IntImm):
        raise Unsupported("cp.async.wait_group with a register count", f"line {ins.line}")
    state.copies = (state.copies[0], min(state.copies[1], count.value))


def _wait_all(state: ThreadState, ins: Instr) -> None:
    state.copies = (0, 0)


GROUPS = {".commit_group": _commit, ".wait_group": _wait_group, ".wait_all": _wait_all}


def require_done(state: ThreadState, what: str, where: str) -> None:
    """Refuse a barrier or an exit passed with a copy in flight (see the module docstring)."""
    if state.copies != (0, 0):
        raise Unsupported(f"a cp.async still in flight at {what} (copies that complete across a barrier)", where)


def ldmatrix(state: ThreadState, ins: Instr) -> None:
    """ldmatrix.sync.aligned.m8n8.x4[.trans][.shared].b16 {d0, d1, d2, d3}, [a]."""
    mods = set(ins.mods)
    if not {".sync", ".aligned", ".m8n8", ".x4", ".b16"} <= mods or mods - {
            ".sync", ".aligned", ".m8n8", ".x4", ".b16", ".trans", ".shared", ".shared::cta"}:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    dst, addr = ins.operands
    if not isinstance(dst, Vec) or len(dst.elems) != 4:
        raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` with these operands", f"line {ins.line}")
    ptr = address_of(state, addr, ins)
    _check_space("shared", ptr.space, ins)
    record(state, ins, "load", ptr, 8, 2, ())
    if state.recording:   # (the loops it lies in: both lanes at the same iteration, `barriers.warp_uniform`)
        state.ctx.warp_uniform.append((f"{ins.opcode}{''.join(ins.mods)} at line {ins.line}", state.condition(),
                                       state.loops))
    why = f"ldmatrix hands matrix rows between the lanes of a warp (line {ins.line}); not modelled yet"
    for d in dst.elems:
        state.write(d, state.opaque(z3.RealVal(0), why))   # (Triton moves floats as b16 pairs)


ASYNC = {"cp": copy, "ldmatrix": ldmatrix}
