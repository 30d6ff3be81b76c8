"""Warp-synchronous instructions: shfl.sync, vote.sync, redux.sync, activemask, bar.warp.sync.

Each runs once for a group of lanes of one warp waiting at the same instruction (the scheduler gathers
them). Every lane named by the member mask must be in the group, else the run cannot say what happens
(a lane that exited, waits elsewhere, or does not exist): `Unsupported`. `activemask` returns the lanes
gathered at it: one schedule's answer (the value is not determined by the program, DESIGN: it stays opaque
to the symbolic side, so no finding depends on it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from semantics.errors import Unsupported
from semantics.ptx.ast import Instr, Vec
from semantics.ptx.types import TYPES, types_in

from .alu import _sv
from .operands import PRED, data_reader, int_reader, pred_reader, writer
from .values import mask

Collective = Callable[[list], None]   # runs for the lanes (threads) of one group, sorted by lane


def _groups(lanes: list, get_mask: Callable[[dict], int] | None, what: str) -> list[tuple[int, list]]:
    """The lanes split by member mask, each group checked to be exactly the lanes its mask names."""
    if get_mask is None:
        return [(sum(1 << t.lane for t in lanes), lanes)]
    by_mask: dict[int, list] = {}
    for t in lanes:
        by_mask.setdefault(get_mask(t.regs), []).append(t)
    for m, group in by_mask.items():
        if sum(1 << t.lane for t in group) != m:
            raise Unsupported(f"{what} with member mask {m:#010x} reached by lanes "
                              f"{[t.lane for t in group]} only (others exited, wait elsewhere or do not exist)")
    return list(by_mask.items())


SHUFFLE_MODES = {".up", ".down", ".bfly", ".idx"}


def _source_lane(mode: str, lane: int, b: int, c: int) -> tuple[int, bool]:
    """PTX ISA, shfl.sync: the lane read and whether it is in range (else the own value is kept)."""
    bval, clamp, seg = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & seg) | (clamp & ~seg)
    min_lane = lane & seg
    if mode == ".up":
        j = lane - bval
        ok = j >= max_lane
    elif mode == ".down":
        j = lane + bval
        ok = j <= max_lane
    elif mode == ".bfly":
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg)
        ok = j <= max_lane
    return (j, True) if ok else (lane, False)


def shfl(p, ins: Instr) -> Collective:
    """shfl.sync.mode.b32 d[|p], a, b, c, membermask."""
    modes = [m for m in ins.mods if m in SHUFFLE_MODES]
    if ".sync" not in ins.mods or len(modes) != 1 or len(ins.operands) != 5:
        raise Unsupported(f"`shfl{''.join(ins.mods)}`")
    mode, u32 = modes[0], TYPES[".u32"]
    dst, a_op, b_op, c_op, m_op = ins.operands
    ga = data_reader(p.regs, a_op, TYPES[".b32"], p.variables)
    gb, gc, gm = int_reader(p.regs, b_op, u32), int_reader(p.regs, c_op, u32), int_reader(p.regs, m_op, u32)
    targets = list(dst.elems) if isinstance(dst, Vec) else [dst]
    put = writer(p.regs, targets[0], TYPES[".b32"])
    put_valid = writer(p.regs, targets[1], PRED) if len(targets) > 1 else None
    what = f"shfl.sync at line {ins.line}"

    def run(lanes: list) -> None:
        for _, group in _groups(lanes, gm, what):
            values = {t.lane: ga(t.regs) for t in group}
            results = []
            for t in group:
                j, ok = _source_lane(mode, t.lane, gb(t.regs), gc(t.regs))
                if j not in values:
                    raise Unsupported(f"{what}: lane {t.lane} reads lane {j}, outside the member mask")
                results.append((t, values[j], ok))
            for t, v, ok in results:
                put(t.regs, v)
                if put_valid is not None:
                    put_valid(t.regs, ok)
    return run


VOTES: dict[str, Callable[[list[bool]], object]] = {
    ".all": all, ".any": any, ".uni": lambda ps: all(ps) or not any(ps),
    ".ballot": None,   # the lanes' bits, by lane number (built in `vote`)
}


def vote(p, ins: Instr) -> Collective:
    """vote.sync.{all,any,uni}.pred d, a, membermask; vote.sync.ballot.b32 d, a, membermask."""
    mode = next((m for m in ins.mods if m in VOTES), None)
    if ".sync" not in ins.mods or mode is None or len(ins.operands) != 3:
        raise Unsupported(f"`vote{''.join(ins.mods)}`")
    dst, a_op, m_op = ins.operands
    ga, gm = pred_reader(p.regs, a_op), int_reader(p.regs, m_op, TYPES[".u32"])
    put = writer(p.regs, dst, TYPES[".b32"] if mode == ".ballot" else PRED)
    what = f"vote.sync at line {ins.line}"

    def run(lanes: list) -> None:
        for _, group in _groups(lanes, gm, what):
            votes = [(t.lane, ga(t.regs)) for t in group]
            result = sum(1 << lane for lane, v in votes if v) if mode == ".ballot" else \
                VOTES[mode]([v for _, v in votes])
            for t in group:
                put(t.regs, result)
    return run


REDUCTIONS: dict[str, Callable[[int, int, int, bool], int]] = {
    ".add": lambda a, b, w, s: (a + b) & mask(w),
    ".min": lambda a, b, w, s: a if _sv(a, w, s) <= _sv(b, w, s) else b,
    ".max": lambda a, b, w, s: a if _sv(a, w, s) >= _sv(b, w, s) else b,
    ".and": lambda a, b, w, s: a & b,
    ".or": lambda a, b, w, s: a | b,
    ".xor": lambda a, b, w, s: a ^ b,
}


def redux(p, ins: Instr) -> Collective:
    """redux.sync.op.type d, a, membermask on 32-bit integers, folded over the group's lanes."""
    op = next((m for m in ins.mods if m in REDUCTIONS), None)
    types = types_in(ins.mods)
    if ".sync" not in ins.mods or op is None or len(types) != 1 or types[0].is_float or len(ins.operands) != 3:
        raise Unsupported(f"`redux{''.join(ins.mods)}`")
    ty = types[0]
    dst, a_op, m_op = ins.operands
    ga, gm, put = int_reader(p.regs, a_op, ty), int_reader(p.regs, m_op, TYPES[".u32"]), writer(p.regs, dst, ty)
    fn, w, s = REDUCTIONS[op], ty.bits, ty.signed
    what = f"redux.sync at line {ins.line}"

    def run(lanes: list) -> None:
        for _, group in _groups(lanes, gm, what):
            result = functools.reduce(lambda a, b: fn(a, b, w, s), [ga(t.regs) for t in group])
            for t in group:
                put(t.regs, result)
    return run


def activemask(p, ins: Instr) -> Collective:
    (dst,) = ins.operands
    put = writer(p.regs, dst, TYPES[".b32"])

    def run(lanes: list) -> None:
        active = sum(1 << t.lane for t in lanes)
        for t in lanes:
            put(t.regs, active)
    return run


def warp_barrier(p, ins: Instr) -> Collective:
    """bar.warp.sync membermask (__syncwarp): the named lanes meet; it is not a block barrier, so it does
    not end a barrier interval (DESIGN §3 counts only block barriers)."""
    (m_op,) = ins.operands
    gm = int_reader(p.regs, m_op, TYPES[".u32"])
    what = f"bar.warp.sync at line {ins.line}"

    def run(lanes: list) -> None:
        _groups(lanes, gm, what)
    return run


WARP: dict[str, Callable] = {"shfl": shfl, "vote": vote, "redux": redux, "activemask": activemask}
