"""Part of memory safety: every read of shared memory reads a value some thread of the block wrote in an
earlier barrier interval.

For a load by a symbolic thread, a hint names the writer (a thread of the same block, found by inverting
a store's offset); the obligation "the load happens and none of the hinted writers wrote its bytes in an
earlier phase" being unsat proves it. A hole is reported only for a concrete reader for which no thread
of the block could have written the element under any path, a query without hints or quantifiers.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics.properties.common import (
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    mentions_opaque,
    shaped_thread,
    sites,
    thread_witness,
)
from semantics.properties.races import OTHER, second_thread
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access


def _element(access: Access, offset: z3.BitVecRef) -> z3.BitVecRef:
    return z3.LShR(offset, access.elem_bytes.bit_length() - 1)


def _writes(store: Access, load: Access, guard, offset, same_phase: bool = False) -> z3.BoolRef:
    """The store (already renamed to its writer) covers the load's bytes, in an earlier phase (or, with
    `same_phase`, possibly in the load's own phase too)."""
    phase_ok = store.phase <= load.phase if same_phase else store.phase < load.phase
    return z3.And(guard, z3.ULE(offset, load.offset), z3.ULE(load.offset + load.width, offset + store.width),
                  z3.BoolVal(phase_ok))


def _hinted_writer(store: Access, load: Access, thread: Thread, block: tuple, propose: Callable, key: str,
                   hints: dict):
    """The store performed by the thread the prover names as the load's writer, or None."""
    tids = list(thread.tid)
    hint = propose(key, _element(store, store.offset), tids, _element(store, load.offset))
    if hint is None:
        return None
    hints[key] = hint
    subst = [(v, hint[str(v)]) for v in tids]
    writer = [z3.And(*[z3.ULT(hint[str(t)], n) for t, n in zip(tids, block, strict=True)])]
    return z3.And(*writer, _writes(store, load, z3.substitute(store.guard, *subst),
                                   z3.substitute(store.offset, *subst)))


def check(accesses: list[Access], thread: Thread, launch: Launch, shared_symbols: set[str], propose: Callable,
          checker: Checker, timeout_s: float, record, accepted: dict,
          proved_lines: set[int] = frozenset()) -> PropertyResult:
    """`proved_lines`: loads in loops with barriers already proved to read a same-iteration store
    (`semantics.properties.loop_shared`, its "happens" obligation); they are not checked again."""
    result = PropertyResult()
    stores = [a for a in accesses if a.space == "shared" and a.kind == "store"]
    all_loads = [a for a in accesses if a.space == "shared" and a.kind == "load"]
    loads = [a for a in all_loads if a.line not in proved_lines]
    names = sites(stores) | sites(all_loads)   # hint keys unique per load and store site
    if not loads:
        return result
    if any(a.phase_term is not None for a in loads + stores):
        # phases that are terms in a loop's iteration (barriers inside a loop) are not compared here
        result.downgrade(UNKNOWN, f"shared memory is read in a kernel with barriers inside a loop (line "
                                  f"{loads[0].line if loads else stores[0].line}): that every such read sees an "
                                  f"earlier write is not checked yet")
        return result
    for load in loads:
        candidates = [s for s in stores if s.buffer == load.buffer and s.phase < load.phase]
        if any(s.loops for s in candidates):
            result.downgrade(UNKNOWN, f"the shared read at line {load.line} may read a value written in a loop")
            continue
        keys = [f"shared_init:{names[id(load)]}:from{names[id(s)]}" for s in candidates]
        proposed: dict = {}
        writers = [w for s, key in zip(candidates, keys, strict=True)
                   if (w := _hinted_writer(s, load, thread, launch.block, propose, key, proposed)) is not None]
        formula = z3.And(thread.in_launch(launch), load.guard, z3.Not(z3.Or(writers)) if writers else z3.BoolVal(True))
        ob = Obligation(f"memory_safety: the shared read at line {load.line} reads a written value", "memory_safety",
                        formula, thread_witness(thread, load.loops))
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        if outcome.status == PROVED:
            accepted.update(proposed)
            continue
        if outcome.status == REFUTED and not mentions_opaque(load.guard) and not load.loops:
            # A hole is definite only if no store of the block, in any phase up to the read's own (any order
            # within it), could have written the element.
            anyone = [s for s in stores if s.buffer == load.buffer and s.phase <= load.phase]
            if _no_writer_at_all(load, anyone, thread, launch, shared_symbols, outcome, checker, timeout_s):
                result.downgrade(VIOLATED)
                result.findings.append(_finding(load, outcome.model))
                return result
        result.downgrade(UNKNOWN, f"could not prove the shared read at line {load.line} reads a written value")
    return result


def _no_writer_at_all(load, candidates, thread, launch, shared_symbols, outcome, checker, timeout_s) -> bool:
    fixes = [(v, z3.BitVecVal(outcome.model[name], 32)) for name, v in thread_witness(thread).items()]
    cases = []
    for store in candidates:
        guard, offset, _ = second_thread(store, thread, OTHER, shared_symbols)
        cases.append(z3.And(OTHER.in_launch(launch), OTHER.same_block(thread),
                            _writes(store, load, guard, offset, same_phase=True)))
    probe = z3.substitute(z3.And(load.guard, z3.Or(cases) if cases else z3.BoolVal(False)), *fixes)
    return checker.check(Obligation("a writer exists", "memory_safety", probe), timeout_s).status == PROVED


def _finding(load: Access, model: dict) -> Finding:
    reader = shaped_thread(model)
    return Finding("memory_safety",
                   f"shared read of {load.buffer} at line {load.line} by block {reader['block']} thread "
                   f"{reader['thread']} reads memory no thread of the block wrote before it",
                   {**reader, "buffer": load.buffer, "access": "load", "line": load.line})
