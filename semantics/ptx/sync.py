"""Barriers, warp-synchronous operations and atomics: the instructions through which threads talk.

A barrier ends a phase: the path records which barrier it passed, so accesses carry their phase and
barrier uniformity can compare the barrier sequences of two threads. Inside a loop body the executor
counts the body's barriers per iteration (semantics/ptx/loop_phases.py). Values that come from other
threads (shuffles, votes, warp reductions, the old value of an atomic) are opaque here: properties that
depend on them are reported unknown, never guessed.
"""

from __future__ import annotations

import functools
import re

import z3

from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.ast import Instr, IntImm, Vec
from semantics.ptx.async_copy import require_done
from semantics.ptx.memory import _access, _check_space
from semantics.ptx.state import ThreadState, address_of
from semantics.ptx.types import TYPES, types_in
from semantics.terms import constants

ATOMIC_OPS = frozenset({".add", ".min", ".max"})
SCOPES = frozenset({".relaxed", ".acquire", ".release", ".acq_rel", ".cta", ".gpu", ".sys", ".global", ".shared",
                    ".noftz"})


def barrier(state: ThreadState, ins: Instr) -> None:
    """bar.sync / barrier.sync with barrier 0 and no thread count: every thread of the block waits."""
    mods = set(ins.mods) - {".sync", ".aligned", ".cta"}
    if ins.opcode == "bar" and ".sync" not in ins.mods or mods:
        raise Unsupported(f"barrier `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], IntImm):
        raise Unsupported("a named barrier or a barrier with a thread count", f"line {ins.line}")
    if state.guard_pred is not None:
        raise Unsupported("a predicated barrier", f"line {ins.line}")
    require_done(state, "a barrier", f"line {ins.line}")
    state.barriers = state.barriers + (ins.line,)


def _warp_value(state: ThreadState, ins: Instr, what: str) -> None:
    """Write opaque results for every destination of a warp-synchronous instruction."""
    dst = ins.operands[0]
    src = ins.operands[1] if len(ins.operands) > 1 else None
    like = state.read_data(src, TYPES[".b32"]) if src is not None and not isinstance(src, IntImm) else \
        z3.BitVecVal(0, 32)
    targets = dst.elems if isinstance(dst, Vec) else [dst]
    why = f"{what} exchanges values between the lanes of a warp (line {ins.line}); not modelled yet"
    state.write(targets[0], state.opaque(like if isinstance(like, z3.ExprRef) else z3.BitVecVal(0, 64), why))
    for extra in targets[1:]:
        state.write(extra, state.opaque(z3.BoolVal(True), why))


SHUFFLE_MODES = {".up", ".down", ".bfly", ".idx"}


def shfl(state: ThreadState, ins: Instr) -> None:
    """shfl.sync.mode.b32 d[|p], a, b, c, membermask: d = a of lane j (PTX ISA, shfl.sync).

    Along one path every register is a function of the thread's coordinates, so lane j's `a` is this
    thread's `a` with tid.x replaced by the id of lane j — provided lane j is on the same path, which is
    recorded as a warp-uniformity side condition for the checker. Partial masks, segmented widths,
    multi-dimensional blocks and values that are not such functions (opaque values, loop-iteration
    dependent ones) are not modelled: the result is opaque."""
    if ".sync" not in ins.mods:
        raise Unsupported("shfl without .sync", f"line {ins.line}")
    modes = [m for m in ins.mods if m in SHUFFLE_MODES]
    dst, a_op, b_op, c_op, mask_op = ins.operands
    exchanged = _lane_value(state, ins, modes, a_op, b_op, c_op, mask_op)
    if exchanged is None:
        _warp_value(state, ins, "shfl.sync")
        return
    value, valid = exchanged
    targets = dst.elems if isinstance(dst, Vec) else [dst]
    state.write(targets[0], value)
    if len(targets) > 1:
        state.write(targets[1], valid)


def _constant(state: ThreadState, op, bits: int = 32) -> int | None:
    value = z3.simplify(state.read(op, TYPES[f".b{bits}"]))
    return value.as_long() if z3.is_bv_value(value) else None


def _whole_warp(state: ThreadState, ins: Instr, mask_op, value) -> bool:
    """Whether `value` can be read at the other lanes of this warp by renaming tid.x: a full member mask, a 1-D
    block of whole warps, and a value that is a function of the thread's coordinates. Records the side
    condition that every lane of the warp is on this path (checked by barriers.warp_uniform)."""
    launch = state.ctx.launch
    if launch.block[1:] != (1, 1) or launch.block[0] % 32 or _constant(state, mask_op) != 0xFFFFFFFF:
        return False
    if not isinstance(value, z3.ExprRef) or state.in_body or any(_thread_private(x) for x in constants(value)):
        return False
    state.ctx.warp_uniform.append((f"{ins.opcode}{''.join(ins.mods)} at line {ins.line}", state.condition()))
    return True


def _at_lanes(state: ThreadState, value: z3.ExprRef) -> list[z3.ExprRef]:
    """`value` as lanes 0..31 of this thread's warp hold it."""
    tid = state.ctx.thread.tid[0]
    return [z3.substitute(value, (tid, _lane_tid(tid, z3.BitVecVal(i, 5)))) for i in range(32)]


def _lane_tid(tid: z3.BitVecRef, lane: z3.BitVecRef) -> z3.BitVecRef:
    """The tid.x of lane `lane` (5 bits) of this thread's warp: tid - (tid & 31) + lane, written as a bit
    concatenation so that with a concrete tid it simplifies to the very term that lane's own tid gives
    (`semantics.properties.warp_stores` compares lanes that way)."""
    return z3.Concat(z3.Extract(31, 5, tid), lane)


def _lane_value(state: ThreadState, ins: Instr, modes: list, a_op, b_op, c_op, mask_op):
    c = _constant(state, c_op)
    if len(modes) != 1 or c is None or (c >> 8) & 0x1F:
        return None
    a = state.read_data(a_op, TYPES[".b32"])
    if not _whole_warp(state, ins, mask_op, a):
        return None
    tid = state.ctx.thread.tid[0]
    lane = tid & 31
    b = state.read(b_op, TYPES[".u32"]) & 31
    clamp = z3.BitVecVal(c & 0x1F, 32)
    j, valid = {
        ".down": lambda: (lane + b, z3.ULE(lane + b, clamp)),
        ".up": lambda: (lane - b, (lane - b) >= clamp),
        ".bfly": lambda: (lane ^ b, z3.ULE(lane ^ b, clamp)),
        ".idx": lambda: (b, z3.ULE(b, clamp)),
    }[modes[0]]()
    source = z3.If(valid, j, lane)   # < 32 in every mode: a valid j is at most the clamp (31), else the own lane
    return z3.substitute(a, (tid, _lane_tid(tid, z3.Extract(4, 0, source)))), valid


def _thread_private(const: z3.ExprRef) -> bool:
    """Symbols whose value differs between lanes in ways tid does not capture: opaque and fresh values,
    loop iterations, reachability placeholders."""
    name = str(const)
    return "!" in name or name.startswith("reach.") or re.match(r"k\d+\.", name) is not None


def vote(state: ThreadState, ins: Instr) -> None:
    """vote.sync.{all,any,uni}.pred and vote.sync.ballot.b32 over the 32 lanes of the warp (PTX ISA, vote.sync)."""
    mode = next((m for m in ins.mods if m in VOTES), None)
    dst, a_op, mask_op = ins.operands if len(ins.operands) == 3 else (None, None, None)
    p = state.read(a_op, TYPES[".pred"]) if ".sync" in ins.mods and mode and a_op is not None else None
    if p is None or not _whole_warp(state, ins, mask_op, p):
        _warp_value(state, ins, f"{ins.opcode}{''.join(ins.mods)}")
        return
    state.write(dst, VOTES[mode](_at_lanes(state, p)))


def _ballot(lanes: list[z3.BoolRef]) -> z3.BitVecRef:
    bits = [z3.If(p, z3.BitVecVal(1 << i, 32), z3.BitVecVal(0, 32)) for i, p in enumerate(lanes)]
    return z3.simplify(functools.reduce(lambda a, b: a | b, bits))


VOTES = {
    ".all": z3.And,
    ".any": z3.Or,
    ".uni": lambda lanes: z3.Or(z3.And(lanes), z3.Not(z3.Or(lanes))),
    ".ballot": _ballot,
}


def redux(state: ThreadState, ins: Instr) -> None:
    """redux.sync.{add,min,max,and,or,xor} on 32-bit integers: the operation folded over the warp's 32 lanes."""
    op = next((m for m in ins.mods if m in REDUCTIONS), None)
    types = types_in(ins.mods)
    dst, a_op, mask_op = ins.operands if len(ins.operands) == 3 else (None, None, None)
    a = state.read(a_op, types[0]) if op and len(types) == 1 and ".sync" in ins.mods and a_op is not None else None
    if a is None or not _whole_warp(state, ins, mask_op, a):
        _warp_value(state, ins, f"{ins.opcode}{''.join(ins.mods)}")
        return
    signed = types[0].kind == "signed"
    state.write(dst, functools.reduce(REDUCTIONS[op](signed), _at_lanes(state, a)))


REDUCTIONS = {
    ".add": lambda signed: lambda a, b: a + b,
    ".min": lambda signed: lambda a, b: z3.If(a < b if signed else z3.ULT(a, b), a, b),
    ".max": lambda signed: lambda a, b: z3.If(a > b if signed else z3.UGT(a, b), a, b),
    ".and": lambda signed: lambda a, b: a & b,
    ".or": lambda signed: lambda a, b: a | b,
    ".xor": lambda signed: lambda a, b: a ^ b,
}


def activemask(state: ThreadState, ins: Instr) -> None:
    """The currently active lanes: not determined by the program even in a converged warp (independent thread
    scheduling may run a warp's lanes apart), so it stays opaque."""
    _warp_value(state, ins, "activemask")


def unmodelled(state: ThreadState, ins: Instr) -> None:
    _warp_value(state, ins, f"{ins.opcode}{''.join(ins.mods)}")


def atomic(state: ThreadState, ins: Instr) -> None:
    """atom / red with add, min or max: recorded as atomic accesses (they commute with each other; any
    other access to the same location in the same phase is a race). What they add up to is summarised by
    semantics/properties/atomics.py; the old value `atom` returns depends on the order, so it is opaque."""
    ops = [m for m in ins.mods if m.startswith(".") and m not in SCOPES and m not in TYPES]
    if len(ops) != 1 or ops[0] not in ATOMIC_OPS:
        raise Unsupported(f"atomic `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    (ty,) = types_in(ins.mods)
    space = "shared" if ".shared" in ins.mods else "global" if ".global" in ins.mods else None
    if ins.opcode == "atom":
        dst, addr, src = ins.operands
    else:
        dst, (addr, src) = None, ins.operands
    ptr = address_of(state, addr, ins)
    _check_space(space, ptr.space, ins)
    value = state.read_data(src, ty) if not isinstance(src, IntImm) else state.read(src, ty)
    if isinstance(value, z3.ExprRef):
        neginf.refuse_stored(state, value, f"line {ins.line}")
    _access(state, ins, "atomic", ptr, 1, ty.bytes, (value,), op=ops[0][1:])
    if dst is not None:
        state.write(dst, state.opaque(value, f"the old value returned by `atom` (line {ins.line})"))


def no_effect(state: ThreadState, ins: Instr) -> None:
    """Fences order memory between threads; in a race-free phase they change nothing this model sees."""


SYNC = {"bar": barrier, "barrier": barrier, "shfl": shfl, "vote": vote, "activemask": activemask, "redux": redux,
        "match": unmodelled, "atom": atomic, "red": atomic, "fence": no_effect, "membar": no_effect}
