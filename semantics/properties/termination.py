"""Termination: every loop a thread enters is left after finitely many iterations.

A hint proposes, per loop, an iteration bound K (a term over the thread's coordinates). The obligation
"the thread enters the loop and would still take the back edge at iteration K" being unsat proves that
the loop is left at or before K. Loop-free kernels terminate trivially.

Better still is the *exact* exit iteration: K is left (above) and every earlier iteration j < K takes the
back edge (a second, quantifier-free obligation with j free). The executor then continues after the loop
in the state of iteration K, with no iteration variable left in it.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.properties.common import UNKNOWN, PropertyResult
from semantics.ptx.machine import Launch, Thread


def obligation(loop, bound: z3.BitVecRef, thread: Thread, launch: Launch) -> Obligation:
    formula = z3.And(thread.in_launch(launch), loop.entry, loop.stay_at(bound))
    return Obligation(f"termination: loop at line {loop.line} is left by iteration {bound}", "termination",
                      formula)


def stays_before(loop, bound: z3.BitVecRef, thread: Thread, launch: Launch) -> Obligation:
    j = z3.BitVec(f"j.{loop.header}", 64)
    formula = z3.And(thread.in_launch(launch), loop.entry, z3.ULT(j, bound), z3.Not(loop.stay_at(j)))
    return Obligation(f"termination: loop at line {loop.line} runs every iteration before {bound}", "termination",
                      formula)


def exact_exit(loop, key: str, propose: Callable, thread: Thread, launch: Launch, checker: Checker,
               timeout_s: float, record, accepted: dict) -> z3.BitVecRef | None:
    """The iteration at which every thread entering `loop` leaves it, proved; None if no hint is."""
    for bound in propose(key, loop):
        exits = obligation(loop, bound, thread, launch)
        outcome = checker.check(exits, timeout_s)
        record(exits, outcome)
        if outcome.status != PROVED:
            continue
        earlier = stays_before(loop, bound, thread, launch)
        outcome = checker.check(earlier, timeout_s)
        record(earlier, outcome)
        if outcome.status == PROVED:
            accepted[key] = bound
            loop.exit = bound
            return bound
    return None


def loop_key(loops: list, loop) -> str:
    """A name for the loop stable across runs: its header label and which entry of that header it is."""
    same = [other for other in loops if other.header == loop.header]
    return f"termination:{loop.header}#{same.index(loop)}"


def check(loops: list, propose: Callable, thread: Thread, launch: Launch, checker: Checker, timeout_s: float,
          record, accepted: dict) -> tuple[PropertyResult, dict[int, z3.BitVecRef]]:
    """`propose(loop)` is the untrusted source of candidate bounds. Returns the proved bound of each loop
    (by id) as well: later checks may assume a loop never runs past it."""
    result = PropertyResult()
    proved: dict[int, z3.BitVecRef] = {}
    for loop in loops:
        if loop.exit is not None:
            proved[id(loop)] = loop.exit
            continue
        key = loop_key(loops, loop)
        for bound in propose(key, loop):
            ob = obligation(loop, bound, thread, launch)
            outcome = checker.check(ob, timeout_s)
            record(ob, outcome)
            if outcome.status == PROVED:
                proved[id(loop)] = bound
                accepted[key] = bound
                break
        else:
            result.downgrade(UNKNOWN, f"could not bound the iterations of the loop at line {loop.line}")
    return result, proved
