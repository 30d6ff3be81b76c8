"""Barriers, warp-synchronous operations and atomics: the instructions through which threads talk.

A barrier ends a phase: the path records which barrier it passed, so accesses carry their phase and
barrier uniformity can compare the barrier sequences of two threads. Values that come from other
threads (shuffles, votes, warp reductions, the old value of an atomic) are opaque here: properties that
depend on them are reported unknown, never guessed.
"""

from __future__ import annotations

import z3

from semantics.errors import Unsupported
from semantics.ptx.ast import Instr, IntImm, Vec
from semantics.ptx.memory import _access, _check_space
from semantics.ptx.state import ThreadState, address_of
from semantics.ptx.types import TYPES, types_in

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
    if state.in_body:
        raise Unsupported("a barrier inside a loop", f"line {ins.line}")
    if state.guard_pred is not None:
        raise Unsupported("a predicated barrier", f"line {ins.line}")
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


def shfl(state: ThreadState, ins: Instr) -> None:
    if ".sync" not in ins.mods:
        raise Unsupported("shfl without .sync", f"line {ins.line}")
    _warp_value(state, ins, "shfl.sync")


def vote(state: ThreadState, ins: Instr) -> None:
    _warp_value(state, ins, f"{ins.opcode}{''.join(ins.mods)}")


def atomic(state: ThreadState, ins: Instr) -> None:
    """atom / red with add, min or max: recorded as atomic accesses (they commute with each other; any
    other access to the same location in the same phase is a race)."""
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
    _access(state, ins, "atomic", ptr, 1, ty.bytes, (value,))
    state.ctx.opaque.setdefault("atomic", f"atomic accumulation (line {ins.line}) is not summarised yet")
    if dst is not None:
        state.write(dst, state.opaque(value, f"the old value returned by `atom` (line {ins.line})"))


def no_effect(state: ThreadState, ins: Instr) -> None:
    """Fences order memory between threads; in a race-free phase they change nothing this model sees."""


SYNC = {"bar": barrier, "barrier": barrier, "shfl": shfl, "vote": vote, "activemask": vote, "redux": vote,
        "match": vote, "atom": atomic, "red": atomic, "fence": no_effect, "membar": no_effect}
