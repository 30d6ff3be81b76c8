"""A concrete PTX interpreter, written apart from the symbolic executor, that replays witnesses (trusted).

It shares with `semantics/ptx` only the parser's AST, the type table, the launch and buffer records and the
axiom table's ideal functions; its instruction meanings are its own tables (`alu.py`, `access.py`,
`warp.py`), so a bug in the symbolic executor cannot make a false witness reproduce here.

    run_blocks(kernel, launch, args, buffers, blocks, *, threads=None, max_steps=..., stop=None,
               scalars=None, record=True, first=None) -> RunResult

runs every thread of the given blocks (barriers, shared memory, shuffles, votes, atomics) on sparse global
buffers (`SparseBuffer`: listed elements plus one fill value), and returns the final memory
(`RunResult.final(buffer, index)`, `.written`), every access (`.accesses`: `Access` records) and the
violations seen (`.violations`: out of bounds, misaligned, an undefined register, an unwritten shared read,
barrier divergence, races within a block's barrier interval or across the blocks run). See `run.py`.
"""

from semantics.concrete.memory import KINDS, Access, SparseBuffer, Violation
from semantics.concrete.run import DEFAULT_MAX_STEPS, BudgetExceeded, RunResult, run_blocks

__all__ = ["KINDS", "Access", "BudgetExceeded", "DEFAULT_MAX_STEPS", "RunResult", "SparseBuffer", "Violation",
           "run_blocks"]
