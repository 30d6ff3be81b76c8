"""Stores that every lane of a converged warp makes with one value: one write, not a race.

Triton ends a cross-warp reduction with `st.shared [warp slot], v`, unpredicated, after a butterfly
all-reduce: all 32 lanes store the same value at the same address. The CUDA programming guide (SIMT
architecture) says that when one warp instruction writes the same location for several of its threads,
the writes are serialised and one of them is the final one. When every such lane stores the same value,
the location holds that value whichever lane is last, exactly as if one lane had stored it.

`uniform` accepts a store site as such a warp-wide write when two obligations are proved, for two distinct
threads of one warp of one block:

* convergence: when one reaches the store, so does the other (the whole warp executes it together — the
  same side condition as a shuffle's, DESIGN §5);
* one value: every lane stores what lane 0 stores (lanes taken concretely, the warp and block symbolic;
  a warp has 32 lanes whatever the tensor size).

Only stores outside loops, with the value terms known at the site, qualify. The race check then ignores
same-warp pairs of the site, and the shared-value resolution accepts any writer of the warp.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.properties.common import local_constants, rename_apart
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access


def same_warp(thread: Thread, other: Thread) -> z3.BoolRef:
    """Same block and the same warp of a one-dimensional block (lanes are tid.x mod 32)."""
    return z3.And(thread.same_block(other), other.tid[1] == thread.tid[1], other.tid[2] == thread.tid[2],
                  z3.UDiv(thread.tid[0], 32) == z3.UDiv(other.tid[0], 32))


LANES = 32


def obligations(store: Access, thread: Thread, other: Thread, launch: Launch,
                shared: set[str]) -> list[Obligation] | None:
    """The two obligations (convergence, one value) that make `store` a warp-wide write, or None for a store
    that cannot be one (in a loop, a value that depends on more than the thread's coordinates, ...)."""
    if store.kind != "store" or store.loops or launch.block[1:] != (1, 1) or launch.block[0] % LANES:
        return None
    coordinates = {str(v) for v in thread.variables()}
    if any(str(c) not in coordinates for t in (store.guard, *store.values) for c in local_constants(t, shared)):
        return None   # a value that depends on more than the thread's coordinates: lanes are not substitutions
    pairs = rename_apart([store.guard], thread, other, shared)
    base = z3.And(thread.in_launch(launch), other.in_launch(launch), same_warp(thread, other),
                  z3.Not(thread.same_thread(other)))
    converged = Obligation(f"race_freedom: every lane of the warp executes the store at line {store.line}",
                           "race_freedom", z3.And(base, store.guard, z3.Not(z3.substitute(store.guard, *pairs))))
    return [converged, _one_value(store, thread, launch)]


def uniform(store: Access, thread: Thread, other: Thread, launch: Launch, shared: set[str], checker: Checker,
            timeout_s: float, record) -> bool:
    """Whether every lane of a warp executes `store` together and all of them store one value."""
    obs = obligations(store, thread, other, launch, shared)
    return obs is not None and all(_proved(ob, checker, timeout_s, record) for ob in obs)


def _one_value(store: Access, thread: Thread, launch: Launch) -> Obligation:
    """Lane c of a warp stores what lane 0 stores, for every c: tid.x = 32·w + c with c concrete, so the
    lanes' exchanged operands (tid.x ^ m, …) become the same terms in a different order."""
    warp = z3.BitVec("warp.x", 32 - (LANES - 1).bit_length())
    tid = thread.tid[0]

    def at(lane: int, term: z3.ExprRef) -> z3.ExprRef:
        return z3.simplify(z3.substitute(term, (tid, z3.Concat(warp, z3.BitVecVal(lane, (LANES - 1).bit_length())))))
    first = [at(0, v) for v in store.values]
    differs = [a != b for lane in range(1, LANES) for a, b in zip(first, (at(lane, v) for v in store.values),
                                                                  strict=True)]
    formula = z3.And(at(0, thread.in_launch(launch)), at(0, store.guard), z3.Or(differs))
    return Obligation(f"race_freedom: every lane of the warp stores one value at line {store.line}", "race_freedom",
                      formula)


def _proved(ob: Obligation, checker: Checker, timeout_s: float, record) -> bool:
    outcome = checker.check(ob, timeout_s)
    record(ob, outcome)
    return outcome.status == PROVED
