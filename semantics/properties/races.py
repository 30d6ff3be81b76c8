"""Race freedom by two-thread reasoning (GPUVerify).

Two distinct symbolic threads of the launch, each with its own copy of every thread-local symbol; a race
is a model in which one writes and the other touches an overlapping byte of the same buffer while they
are concurrent: threads of different blocks always are (for global memory), threads of one block are
within the same barrier interval (phase). Shared memory is per block, so only threads of one block can
meet there. Two atomics never race with each other; an atomic and a plain access do.
"""

from __future__ import annotations

import itertools

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics.properties import block_slabs, warp_stores
from semantics.properties.common import (
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    escape,
    goal_of,
    input_reads,
    mentions_opaque,
    prove,
    rename_apart,
    second_thread,
    shaped_inputs,
    shaped_thread,
    thread_witness,
)
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access

OTHER = Thread.fresh("'")
QUICK_S = 1.0   # the plain obligation's first try; a harder global pair goes to the slab lemma first


def conflicting_pairs(accesses: list[Access]) -> list[tuple[Access, Access]]:
    """Pairs (a write, any access) on the same buffer that are not both atomic: the only pairs that can race."""
    pairs = []
    for a, b in itertools.combinations_with_replacement(accesses, 2):
        kinds = {a.kind, b.kind}
        if a.buffer == b.buffer and kinds & {"store", "atomic"} and kinds != {"atomic"}:
            pairs.append((a, b) if a.kind != "load" else (b, a))
    return pairs


def same_phase(a: Access, b: Access, thread: Thread, shared: set[str]) -> z3.BoolRef:
    """The first thread's access a and the second thread's access b lie in the same barrier interval. With
    barriers inside loops the phases are terms in the iteration (`semantics.ptx.loop_phases`): b's is
    renamed apart to the second thread, like its guard and offset."""
    if a.phase_term is None and b.phase_term is None:
        return z3.BoolVal(a.phase == b.phase)
    phase_a = a.phase_term if a.phase_term is not None else z3.BitVecVal(a.phase, 64)
    phase_b = b.phase_term if b.phase_term is not None else z3.BitVecVal(b.phase, 64)
    return phase_a == z3.substitute(phase_b, *rename_apart([phase_b], thread, OTHER, shared))


def concurrent(a: Access, b: Access, thread: Thread, shared: set[str] = frozenset()) -> z3.BoolRef:
    """When the two threads' accesses can happen at the same time."""
    same_block = thread.same_block(OTHER)
    if a.space == "shared":
        return z3.And(same_block, same_phase(a, b, thread, shared))
    return z3.Or(z3.Not(same_block), same_phase(a, b, thread, shared))


def obligation(a: Access, b: Access, thread: Thread, launch: Launch, shared: set[str],
               warp_wide: bool = False) -> Obligation:
    """Two threads race at (a, b). With `warp_wide` (a is one store site proved `warp_stores.uniform`), two
    lanes of one warp at that site are one write, not a race."""
    guard_b, offset_b, loops_b = second_thread(b, thread, OTHER, shared)
    overlap = z3.And(z3.ULT(a.offset, offset_b + b.width), z3.ULT(offset_b, a.offset + a.width))
    formula = z3.And(thread.in_launch(launch), OTHER.in_launch(launch), z3.Not(thread.same_thread(OTHER)),
                     concurrent(a, b, thread, shared), a.guard, guard_b, overlap)
    if warp_wide:
        formula = z3.And(formula, z3.Not(warp_stores.same_warp(thread, OTHER)))
    witness = {**thread_witness(thread, a.loops), **thread_witness(OTHER, loops_b, "'"), "offset": a.offset,
               "offset'": offset_b, **input_reads(formula)}
    return Obligation(f"race_freedom: {a.kind} line {a.line} vs {b.kind} line {b.line} on {a.buffer}",
                      "race_freedom", formula, witness)


def goals(accesses: list[Access], thread: Thread, launch: Launch,
          shared: set[str]) -> list[tuple[str, tuple[z3.BoolRef, ...]]]:
    """The top goals: per conflicting pair of access sites, no two threads race there. Each goal has two
    accepted statements when a is b (one store site): ¬race, or ¬race between threads of different warps
    (the warp-wide form, which `check` uses once `warp_stores.uniform` proved the warp's lanes write one
    value — that side condition is not yet a theorem the verdict checks)."""
    out = []
    for a, b in conflicting_pairs(accesses):
        plain = obligation(a, b, thread, launch, shared)
        warp_wide = z3.And(plain.formula, z3.Not(warp_stores.same_warp(thread, OTHER)))   # as `obligation` builds it
        forms = (goal_of(plain), z3.Not(warp_wide)) if a is b else (goal_of(plain),)
        out.append((plain.name, forms))
    return out


def check(accesses: list[Access], elem_bytes: dict[str, int], thread: Thread, launch: Launch, shared: set[str],
          checker: Checker, timeout_s: float, record) -> PropertyResult:
    result = PropertyResult()
    slabs = block_slabs.Slabs(thread, OTHER, launch, checker, timeout_s, record)
    for a, b in conflicting_pairs(accesses):
        ob = obligation(a, b, thread, launch, shared)
        outcome = prove(ob, checker, min(timeout_s, QUICK_S), record, result)
        if outcome.status not in (PROVED, REFUTED) and a.space == "global":
            if (theorem := _by_slabs(a, b, ob, thread, shared, slabs)) is not None:
                result.theorems.append(theorem)
                continue
        if outcome.status not in (PROVED, REFUTED) and timeout_s > QUICK_S:
            outcome = prove(ob, checker, timeout_s, record, result)
        if outcome.status != PROVED and a is b and \
                warp_stores.uniform(a, thread, OTHER, launch, shared, checker, timeout_s, record):
            ob = obligation(a, b, thread, launch, shared, warp_wide=True)
            outcome = prove(ob, checker, timeout_s, record, result)
        if outcome.status == PROVED:
            continue
        if outcome.status == REFUTED and not mentions_opaque(ob.formula) and \
                _reached(a, b, ob, outcome, thread, checker, timeout_s):
            result.downgrade(VIOLATED)
            size = a.elem_bytes if a.space == "shared" else elem_bytes[a.buffer]
            result.findings.append(_finding(a, b, size, outcome.model))
            result.findings[-1].witness["inputs"] = shaped_inputs(ob.formula, outcome.model)
            break
        result.downgrade(UNKNOWN, f"could not rule out a race between lines {a.line} and {b.line} on {a.buffer} "
                                  f"({outcome.reason or 'counterexample not confirmed'})")
    return result


def _by_slabs(a: Access, b: Access, ob: Obligation, thread: Thread, shared: set[str],
              slabs: block_slabs.Slabs):
    """⊢ ¬race at (a, b) by the per-block slab lemma (`block_slabs`), or None."""
    pairs = rename_apart([b.guard, b.offset], thread, OTHER, shared)
    guard_b, offset_b = (z3.substitute(t, *pairs) for t in (b.guard, b.offset))
    return block_slabs.prove_race_free(a, b, ob.formula, guard_b, offset_b, pairs, slabs, ob.name)


def _reached(a: Access, b: Access, ob: Obligation, outcome, thread: Thread, checker: Checker,
             timeout_s: float) -> bool:
    """Both threads' loop iterations in the model are really reached."""
    for access, suffix in ((a, ""), (b, "'")):
        if not access.loops:
            continue
        originals = thread_witness(thread, access.loops)
        named = thread_witness(thread, access.loops, suffix)   # same order, the names the model used
        fixes = [(t, z3.BitVecVal(outcome.model[name], t.size()))
                 for t, name in zip(originals.values(), named, strict=True)]
        probe = Obligation("reachability of a witness", "race_freedom", escape(access.loops, fixes))
        if checker.check(probe, timeout_s).status != PROVED:
            return False
    return True


def _finding(a: Access, b: Access, elem_bytes: int, model: dict) -> Finding:
    index = model["offset"] // elem_bytes
    first, second = shaped_thread(model), shaped_thread(model, "'")
    msg = (f"data race on {a.buffer}[{index}]: block {first['block']} thread {first['thread']} {a.kind}s it "
           f"(line {a.line}) while block {second['block']} thread {second['thread']} {b.kind}s it "
           f"(line {b.line})")
    witness = {"buffer": a.buffer, "element_index": index,
               "first": {**first, "access": a.kind, "line": a.line},
               "second": {**second, "access": b.kind, "line": b.line}}
    return Finding("race_freedom", msg, witness)
