"""How the checker a job talks to is assembled from one backend and the wrappers (STYLE 8, KLEE's solver chain).

    LocalModels( CachingChecker( BudgetChecker( backend ) ) )

The budget is innermost so cache hits stay free; the cache wraps it so only real solver answers are stored;
in-process models are attached last, so a refutation from the cache, a worker or an actor replays alike.
"""

from __future__ import annotations

from lean_pool.budget import Budget, BudgetChecker
from lean_pool.cache import CachingChecker, DiskLemmaStore, LemmaStore
from lean_pool.checker import Checker, Z3Checker
from lean_pool.local_model import LocalModels


def assemble(backend: Checker, store: LemmaStore | None = None, budget: Budget | None = None) -> Checker:
    checker = backend if budget is None else BudgetChecker(backend, budget)
    if store is not None:
        checker = CachingChecker(checker, store)
    return LocalModels(checker)


def local_checker(timeout_s: float | None = None) -> Checker:
    """`lark verify`'s embedded default: z3 in-process, the local lemma cache, the task's wall budget."""
    return assemble(Z3Checker(), DiskLemmaStore(), Budget(wall_s=timeout_s))
