"""Dead-code elimination over a PTX body: what is left of a library sequence once `lark.ideal` replaced it.

`semantics.ptx.idioms` inserts the pseudo-instruction where a matched value is computed; the sequence's own
instructions are then deleted only where their results are dead (liveness over the control-flow graph; only
candidates, pure instructions that took part in a match, are ever deleted) and branches to the very next
instruction are dropped. An intermediate still live elsewhere simply stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from semantics.ptx.ast import Instr, Label, Sym

Registers = Callable[[Instr], "set[str] | list[str]"]


class Unfollowed(Exception):
    """The body has control flow the idiom pass does not follow (e.g. a branch to no label)."""


def branch_target(ins: Instr) -> str:
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], Sym):
        raise Unfollowed
    return ins.operands[0].name


def eliminate(items: list, candidates: set[int], uses: Registers, kills: Registers) -> list:
    """Delete candidate instructions whose results are dead and branches to the next instruction, until
    neither changes anything. `items` are (original position or None, item) pairs; `candidates` the original
    positions that may go; `uses(ins)` the registers an instruction may read, `kills(ins)` those it surely
    writes."""
    while True:
        dead = _dead(items, candidates, uses, kills)
        items = [it for k, it in enumerate(items) if k not in dead]
        trivial = _trivial_branches(items)
        items = [it for k, it in enumerate(items) if k not in trivial]
        if not dead and not trivial:
            return items


def _trivial_branches(items: list) -> set[int]:
    out = set()
    for k, (_, item) in enumerate(items):
        if isinstance(item, Instr) and item.opcode == "bra":
            target = branch_target(item)
            j = k + 1
            while j < len(items) and isinstance(items[j][1], Label):
                if items[j][1].name == target:
                    out.add(k)
                    break
                j += 1
    return out


def _dead(items: list, candidates: set[int], uses: Registers, kills: Registers) -> set[int]:
    """Positions of candidate instructions none of whose results is ever read (aggressive dead-code
    elimination: a candidate is kept only when a kept instruction may read what it writes)."""
    cand = {k for k, (orig, item) in enumerate(items) if orig in candidates and isinstance(item, Instr)}
    if not cand:
        return set()
    blocks = _blocks(items)
    read = [uses(item) if isinstance(item, Instr) else set() for _, item in items]
    written = [set(kills(item)) if isinstance(item, Instr) and item.pred is None else set() for _, item in items]
    removed = set(cand)
    while True:
        live_out = _liveness(blocks, read, written, removed)
        needed = {k for k in removed if set(kills(items[k][1])) & live_out[k]}
        if not needed:
            return removed
        removed -= needed


@dataclass
class _Block:
    start: int
    end: int                   # exclusive
    succs: list[int]


def _blocks(items: list) -> list[_Block]:
    """Basic blocks of the item list: a label starts one, a branch or an unguarded ret/exit ends one."""
    starts = {0}
    for k, (_, item) in enumerate(items):
        if isinstance(item, Label):
            starts.add(k)
        elif isinstance(item, Instr) and item.opcode in ("bra", "ret", "exit"):
            starts.add(k + 1)
    starts = sorted(s for s in starts if s < len(items))
    block_of = {s: b for b, s in enumerate(starts)}
    labels = {item.name: k for k, (_, item) in enumerate(items) if isinstance(item, Label)}
    blocks = []
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else len(items)
        last = items[e - 1][1]
        fall = [b + 1] if b + 1 < len(starts) else []
        if isinstance(last, Instr) and last.opcode == "bra":
            succs = [block_of[labels[branch_target(last)]]] + (fall if last.pred is not None else [])
        elif isinstance(last, Instr) and last.opcode in ("ret", "exit") and last.pred is None:
            succs = []
        else:
            succs = fall
        blocks.append(_Block(s, e, succs))
    return blocks


def _liveness(blocks: list[_Block], uses: list[set[str]], kills: list[set[str]], removed: set[int]) -> dict:
    """live-out of every instruction position, with the `removed` positions taken as deleted."""
    def transfer(b: _Block, live: set[str], record: dict | None) -> set[str]:
        for k in range(b.end - 1, b.start - 1, -1):
            if record is not None:
                record[k] = live
            if k not in removed:
                live = uses[k] | (live - kills[k])
        return live

    live_in: list[set[str]] = [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks) - 1, -1, -1):
            out = set().union(*(live_in[s] for s in blocks[b].succs))
            new = transfer(blocks[b], out, None)
            if new != live_in[b]:
                live_in[b] = new
                changed = True
    live_out: dict[int, set[str]] = {}
    for b in blocks:
        transfer(b, set().union(*(live_in[s] for s in b.succs)), live_out)
    return live_out
