"""Barrier uniformity for loops whose body has barriers: every thread of a block iterates equally often.

`semantics.ptx.loop_phases` numbers the phases of accesses in and after such a loop as P₀ + k·b + p; that
numbering matches barrier instances across the threads of a block only if they all pass the same barrier
sequence. Within one iteration every path passes the same barriers (the executor refuses loops where
they differ); the paths before and after the loop are compared by `semantics.properties.barriers`. What
remains is the number of iterations, proved here for two distinct threads t, t' of one block:

* entry: t enters the loop exactly when t' does;
* trip count: at every iteration k, t takes the back edge exactly when t' does (k is shared by the two
  threads, every other thread-local symbol renamed apart).

Together: both threads run the same iterations, hence pass the same barriers. An unproved condition
leaves barrier uniformity unknown (a divergent trip count is undefined behaviour on the GPU; it is not
reported as refuted because no witness of it is built here).
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.properties.common import UNKNOWN, PropertyResult, rename_apart
from semantics.properties.races import OTHER
from semantics.ptx.machine import Launch, Thread


def obligation(loop, thread: Thread, launch: Launch, shared: set[str]) -> Obligation:
    stay = loop.stay_at(loop.k)
    keep = set(shared) | {str(loop.k)}
    pairs = rename_apart([loop.entry, stay], thread, OTHER, keep)
    entry_b, stay_b = (z3.substitute(t, *pairs) for t in (loop.entry, stay))
    differs = z3.Or(loop.entry != entry_b, z3.And(loop.entry, entry_b, stay != stay_b))
    formula = z3.And(thread.in_launch(launch), OTHER.in_launch(launch), thread.same_block(OTHER),
                     z3.Not(thread.same_thread(OTHER)), differs)
    return Obligation(f"barrier_uniformity: every thread of a block runs the loop at line {loop.line} (barriers "
                      f"{list(loop.barriers)} inside) equally often", "barrier_uniformity", formula)


def check(loops: list, thread: Thread, launch: Launch, shared: set[str], checker: Checker, timeout_s: float,
          record) -> PropertyResult:
    result = PropertyResult()
    for loop in loops:
        if not loop.barriers:
            continue
        ob = obligation(loop, thread, launch, shared)
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        if outcome.status != PROVED:
            result.downgrade(UNKNOWN, f"could not prove that every thread of a block runs the loop at line "
                                      f"{loop.line} equally often (it has barriers inside)")
    return result
