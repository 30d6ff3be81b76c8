"""Superseded stores: a store whose every write is overwritten later in its block need not hold the
reference's value (part of equivalence).

A block may zero-fill its tile, pass a barrier, and then let other threads write the final values. The value
an element ends with is the last write in barrier-interval order (DESIGN §3), so the zero-fill is not
compared with the reference when it is proved superseded:

    for every thread T of the launch whose store S (lane j) writes element e, the thread W(e) proposed by
    the untrusted writer prover is a thread of T's block, and its store S' (lane j'), in a strictly later
    barrier interval, writes e.

Stated as one obligation (its negation unsat). Sound composition: every store not proved superseded is
compared with the reference, and the final write to any element is not superseded (nothing writes the
element after it), so the final write is one of the compared ones. S' must lie outside loops and S'
after S by a constant barrier count (`Access.phase`, no loop phase terms): only then is "later" a number.

A store is also superseded by the same thread (`own_later`: an output written, read back and written again,
as a two-pass softmax normalises in place):

    for every thread whose store S (lane j) runs, at whatever iterations, the same thread runs store S'
    (lane j') at the iteration `readbacks.writer_iteration` guesses, later in its program order
    (`readbacks.before`), writing the same element.

S' "runs" exactly there (`readbacks.runs_at`, every loop's exit proved), so S is not the final write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.properties.coverage import E, writer_variables
from semantics.properties.equivalence import element_index
from semantics.properties.readbacks import before, exits_proved, runs_at, writer_iteration
from semantics.ptx.machine import Buffer, Launch, Thread
from semantics.ptx.state import Access


def _plain(access: Access) -> bool:
    return not access.loops and access.phase_term is None


Later = tuple[Access, int, dict[str, z3.ExprRef]]   # a later store site, its lane, the proposed writer of e


def overwritten(laters: list[Later], thread: Thread, launch: Launch) -> z3.BoolRef:
    """One of the later stores' proposed writers, a thread of this thread's block, writes element E."""
    cases = []
    for later, later_lane, hint in laters:
        subst = [(v, hint[str(v)]) for v in writer_variables(later, thread)]
        writer = Thread(thread.tag, tuple(z3.substitute(c, *subst) for c in thread.ctaid),
                        tuple(z3.substitute(t, *subst) for t in thread.tid))
        cases.append(z3.And(writer.in_launch(launch), thread.same_block(writer),
                            z3.substitute(z3.And(later.guard, element_index(later, later_lane) == E), *subst)))
    return z3.Or(cases)


def obligation(store: Access, lane: int, laters: list[Later], buffer: Buffer, thread: Thread, launch: Launch,
               launch_ok: z3.BoolRef) -> Obligation:
    """Unsat iff every write of `store`'s lane to an element e is followed, in the writer's block, by one of
    the later stores' proposed writers writing e."""
    written = z3.And(launch_ok, store.guard, element_index(store, lane) == E, z3.ULT(E, buffer.numel))
    return Obligation(f"equivalence: the store at line {store.line} lane {lane} to {buffer.name} is overwritten "
                      f"later in its block", "equivalence",
                      z3.And(written, z3.Not(overwritten(laters, thread, launch))))


@dataclass
class Supersession:
    """`skipped`: (id of a store site, lane) proved superseded. `overwrites`: for the other lanes that plain
    stores follow by a barrier, the condition (in E) that a proposed later writer of the block writes
    element E — a guide for finding a counterexample among elements nothing overwrites, never a proof."""

    skipped: set[tuple[int, int]] = field(default_factory=set)
    overwrites: dict[tuple[int, int], z3.BoolRef] = field(default_factory=dict)

    def __contains__(self, lane: tuple[int, int]) -> bool:
        return lane in self.skipped


def find(stores: list[Access], buffers: dict[str, Buffer], propose: Callable, thread: Thread, launch: Launch,
         launch_ok: z3.BoolRef, checker: Checker, timeout_s: float, record, accepted: dict) -> Supersession:
    """Every store lane proved superseded. Only sites that some plain store of the same buffer follows by a
    barrier are tried, so kernels without such a pattern pay nothing."""
    found = Supersession()
    for store in stores:
        for lane in range(len(store.values)):
            if own_later(store, lane, stores, launch_ok, checker, timeout_s, record):
                found.skipped.add((id(store), lane))
        if not _plain(store) or all((id(store), lane) in found for lane in range(len(store.values))):
            continue
        sites = [s for s in stores if s.buffer == store.buffer and _plain(s) and s.phase > store.phase]
        laters, keys = [], {}
        for later in sites:
            for later_lane in range(len(later.values)):
                key = f"superseded:{store.buffer}:by:line{later.line}:lane{later_lane}"
                hint = propose(key, element_index(later, later_lane), writer_variables(later, thread), E)
                if hint is not None:
                    laters.append((later, later_lane, hint))
                    keys[key] = hint
        if not laters:
            continue
        for lane in range(len(store.values)):
            if (id(store), lane) in found:
                continue
            ob = obligation(store, lane, laters, buffers[store.buffer], thread, launch, launch_ok)
            outcome = checker.check(ob, timeout_s)
            record(ob, outcome)
            if outcome.status == PROVED:
                found.skipped.add((id(store), lane))
                accepted.update(keys)
            else:
                found.overwrites[(id(store), lane)] = overwritten(laters, thread, launch)
    return found


def own_later(store: Access, lane: int, stores: list[Access], launch_ok: z3.BoolRef, checker: Checker,
              timeout_s: float, record) -> bool:
    """Whether every run of the store's lane is followed by the same thread's store of the same element (the
    module docstring): one obligation per guessed later store, the first proved settles it."""
    same = [t for t in stores if t.buffer == store.buffer]
    if not exits_proved(same):
        return False
    at = store.offset + lane * store.elem_bytes
    for t in same:
        if t is store or t.kind != "store" or t.elem_bytes != store.elem_bytes:   # (a site overwriting itself at a
            continue                                              # later iteration is not looked for)
        for t_lane in range(len(t.values)):
            found, w = writer_iteration(at, store.loops, t, t_lane)
            if not found:
                continue
            fix = [(t.loops[0][1], w)] if w is not None else []
            t_loops, runs = runs_at(t, fix)
            element = z3.substitute(element_index(t, t_lane), *fix) if fix else element_index(t, t_lane)
            later = before(store.loops, store.line, t_loops, t.line)
            ob = Obligation(f"equivalence: the store at line {store.line} lane {lane} to {store.buffer} is overwritten "
                            f"later by the same thread (line {t.line} lane {t_lane})", "equivalence",
                            z3.And(launch_ok, store.guard,
                                   z3.Not(z3.And(runs, element == element_index(store, lane), later))))
            outcome = checker.check(ob, timeout_s)
            record(ob, outcome)
            if outcome.status == PROVED:
                return True
    return False
