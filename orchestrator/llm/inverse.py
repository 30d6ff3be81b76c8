"""Writers of output elements through the search, so an agent can answer where the heuristic cannot.
Untrusted.

The core asks `inverse(key, index, variables, e)` once per store site and checks the answer itself (the
coverage obligation); it does not search. With an agent on, the job's `inverse` asks the search instead:
the heuristic first, then the fallbacks, each candidate judged by a pre-check built here: every element the
site writes, from any thread of the launch, decodes back to a thread of the launch that writes it. The
pre-check only ranks candidates — the core's own obligation decides — and when nothing passes it, the
heuristic's answer goes to the core as it does without an agent.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import Obligation
from orchestrator.search import ProverStrategy
from semantics.ptx.machine import AXES, Launch

PRECHECK_S = 60.0


def _in_launch(variables: list[z3.BitVecRef], launch: Launch) -> z3.BoolRef:
    """Thread coordinates below the launch's dimensions (loop iterations stay unconstrained: stricter)."""
    limits = {f"ctaid.{a}": n for a, n in zip(AXES, launch.grid, strict=True)}
    limits |= {f"tid.{a}": n for a, n in zip(AXES, launch.block, strict=True)}
    return z3.And([z3.ULT(v, limits[str(v)]) for v in variables if str(v) in limits])


def precheck(hint: dict[str, z3.ExprRef], index: z3.BitVecRef, variables: list[z3.BitVecRef], e: z3.BitVecRef,
             launch: Launch) -> list[Obligation]:
    """Sat iff some thread of the launch writes an element whose proposed writer is not a thread of the
    launch writing it."""
    if set(hint) != {str(v) for v in variables} or index.size() != e.size():
        return []
    decoded = [(v, z3.substitute(hint[str(v)], (e, index))) for v in variables]
    back = z3.substitute(index, *decoded)
    inside = _in_launch(variables, launch)
    formula = z3.And(inside, z3.Not(z3.And(z3.substitute(inside, *decoded), back == index)))
    return [Obligation("pre-check: every element the site writes decodes to its writer", "equivalence", formula,
                       {**{str(v): v for v in variables}, "element_index": index})]


def heuristic_strategy(propose: Callable) -> ProverStrategy:
    """The heuristic inverse prover as a strategy (its one proposal, if any)."""
    def candidates(key: str, *args) -> list:
        hint = propose(key, *args)
        return [] if hint is None else [hint]
    return ProverStrategy("inverse", candidates)


def searched(hook: Callable, heuristic: Callable, launch: Launch) -> Callable:
    """The job's `Provers.inverse`: the search's winner, else the heuristic's own answer."""
    def inverse(key: str, index: z3.BitVecRef, variables: list[z3.BitVecRef], e: z3.BitVecRef):
        def obligations(hint) -> list[Obligation]:
            return precheck(hint, index, variables, e, launch)
        won = hook("inverse", key, (index, variables, e), obligations, PRECHECK_S)
        return won[0] if won else heuristic(key, index, variables, e)
    return inverse
