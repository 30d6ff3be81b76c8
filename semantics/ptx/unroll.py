"""Loops run iteration by iteration: tree loops that halve a counter from a constant start.

`for (s = blockDim.x / 2; s > 0; s >>= 1)` and `for (o = warpSize / 2; o > 0; o /= 2)` carry an integer
that is no induction variable (it is not `start + k·step`), so `symexec` cannot summarise them. When every
such register holds a constant at the loop's entry (a launch dimension, `WARP_SZ`, a literal), the loop is
executed as the straight-line code it denotes: the body runs from the entry state, every path that takes
the back edge runs the body again (paths meeting at the header are joined, `merge.Worklist`), every path
that leaves continues after the loop. That is ordinary execution, exact by construction, so nothing is
summarised and no loop is left for termination to prove: the run ends within MAX_ITERATIONS iterations or
is refused. Halving from 2^m ends after m + 1 iterations at most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import z3

from semantics.errors import Unsupported

if TYPE_CHECKING:
    from semantics.ptx.state import ThreadState
    from semantics.ptx.symexec import Executor

MAX_ITERATIONS = 64


class NotInduction(Unsupported):
    """A loop carries integer registers that are not induction variables (`registers`)."""

    def __init__(self, registers: list[str], where: str):
        super().__init__(f"a loop-carried value in {registers[0]} that is not an induction variable", where)
        self.registers = registers


def constant_start(state: ThreadState, registers: list[str]) -> bool:
    """Every register is defined at the loop's entry and holds a constant there."""
    values = [state.regs.get(r) for r in registers]
    return all(isinstance(v, z3.ExprRef) and z3.is_bv_value(z3.simplify(v)) and r not in state.undefined
               for r, v in zip(registers, values, strict=True))


def run(executor: Executor, state: ThreadState, header: int, latch: int, where: str) -> list:
    """The states leaving the loop [header, latch] entered in `state`, each iteration executed in turn."""
    leaving: list = []
    entering = [state]
    for _ in range(MAX_ITERATIONS):
        again: list[ThreadState] = []
        starts = [(header + 1, s) for s in entering]
        leaving += executor.explore_from(starts, (header, latch), again.append)
        if not again:
            return leaving
        entering = again
    raise Unsupported(f"a loop over constants that runs more than {MAX_ITERATIONS} iterations", where)
