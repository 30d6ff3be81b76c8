"""An obligation's text in a fresh z3 context: the one way worker processes and in-process replays solve.

z3's search follows AST ids, so in a long-lived process the same query can take far longer than in a new
one (and a model differs). A fresh context per obligation, with a fixed seed and work limit, makes a run
depend on the text alone (STYLE 9): a worker and an in-process repeat of its work find the same model.
The text is read as the run that made it meant it: z3's parser would take a declared `exp`, `log`, `tanh`,
`sin` or `cos` for its own transcendental function, so those are renamed apart first (`unshadow`), as the
certificate re-check does; otherwise a worker decides another formula than the in-process checker.
"""

from __future__ import annotations

import z3

from lean_pool.cvc5_checker import unshadow


def fresh_solver(text: str, timeout_s: float, seed: int, rlimit: int) -> z3.Solver:
    """A solver holding `text`, in a context of its own; raises z3.Z3Exception if the text does not parse."""
    solver = z3.Solver(ctx=z3.Context())
    solver.set("timeout", max(int(timeout_s * 1000), 1))
    solver.set("rlimit", rlimit)
    solver.set("random_seed", seed)
    solver.from_string(unshadow(text))   # a declared `log`/`exp` stays the uninterpreted ideal function
    return solver
