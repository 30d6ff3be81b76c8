"""Race freedom by two-thread reasoning (GPUVerify).

Two distinct symbolic threads of the launch, each with its own copy of every thread-local symbol; a race
is a model in which one writes and the other touches an overlapping byte of the same buffer while they
are concurrent: threads of different blocks always are (for global memory), threads of one block are
within the same barrier interval (phase). Shared memory is per block, so only threads of one block can
meet there. Two atomics never race with each other; an atomic and a plain access do.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import z3

from lean_pool.checker import Obligation
from semantics.goals import Deferred, Goals
from semantics.properties import warp_stores
from semantics.properties.common import (
    goal_of,
    input_reads,
    rename_apart,
    second_thread,
    thread_witness,
)
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access

OTHER = Thread.fresh("'")


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
          shared: set[str]) -> Goals:
    """The top goals: per conflicting pair of access sites, no two threads race there. Each goal has two
    accepted statements when a is b (one store site): ¬race, or `warp_wide_goal`: the site's lanes of one warp
    write one value (`warp_stores.uniform`) and no two threads of different warps race there. That second one is
    `Deferred`: stated only for a goal whose first form no theorem states."""
    out: Goals = []
    for a, b in conflicting_pairs(accesses):
        plain = obligation(a, b, thread, launch, shared)
        wide = Deferred(functools.partial(warp_wide_goal, a, thread, launch, shared)) if a is b else None
        out.append((plain.name, (goal_of(plain),) if wide is None else (goal_of(plain), wide)))
    return out


_BUILT: dict[tuple, tuple] = {}   # (ids of site, thread, launch; shared) -> (the objects, site's fields, obligations)
_BUILT_MAX = 64


def warp_wide_obligations(a: Access, thread: Thread, launch: Launch, shared: set[str]) -> list[Obligation] | None:
    """For one store site: the obligations that its lanes of one warp write one value (`warp_stores`), then the
    race between threads of different warps; None where the site cannot be a warp-wide write. Built once per
    site as it stands: the race search proves them, and the Deferred goal of `goals` states them again. A site
    is rewritten in place by later passes (a shared read resolved, a read-back substituted); the memo serves
    only while every field is the very object it was built from, and it holds those objects (and the ones
    its key names), so no id is reused while its entry lives."""
    key = (id(a), id(thread), id(launch), frozenset(shared))
    fields = tuple(getattr(a, f.name) for f in dataclasses.fields(a))
    entry = _BUILT.get(key)
    if entry is not None and all(x is y for x, y in zip(entry[1], fields, strict=True)):
        return entry[2]
    uniform = warp_stores.obligations(a, thread, OTHER, launch, shared)
    built = None if uniform is None else [*uniform, obligation(a, a, thread, launch, shared, warp_wide=True)]
    if len(_BUILT) >= _BUILT_MAX:
        _BUILT.pop(next(iter(_BUILT)))
    _BUILT[key] = ((a, thread, launch), fields, built)
    return built


def warp_wide_goal(a: Access, thread: Thread, launch: Launch, shared: set[str]) -> z3.BoolRef | None:
    """The warp-wide form of one store site's race goal, each of `warp_wide_obligations` unsat (their
    conjunction, as `rules.conj` states it). Two lanes of one warp at a site that stores one value to one place
    are one write, not a race."""
    obs = warp_wide_obligations(a, thread, launch, shared)
    return None if obs is None else z3.And(*(goal_of(ob) for ob in obs))
