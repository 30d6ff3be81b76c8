"""A job's budget (wall time, solver seconds) and its cancellation, as a wrapper around a `Checker`.

The core decides a job by asking for obligations one after another; the budget is the one place that can
say "no more". Once the wall clock or the solver seconds are spent, or the job is cancelled, every further
obligation is `unknown` with that reason, without a solver run — so an exhausted or cancelled job still
ends promptly with an honest verdict (`unknown`, never `verified`). Each obligation's timeout is clamped
to what is left of the wall budget. It sits inside the lemma cache, so cache hits are free and still served.
"""

from __future__ import annotations

import threading
import time

from lean_pool.checker import UNKNOWN, Checker, Obligation, Outcome

CANCELLED = "cancelled"


class Budget:
    def __init__(self, wall_s: float | None = None, solver_s: float | None = None):
        self.wall_s = wall_s
        self.solver_s = solver_s
        self.solver_spent = 0.0
        self._start = time.monotonic()
        self._cancelled = threading.Event()     # set from another thread (an actor's control call)
        self._charging = threading.Lock()       # a search checks obligations on several threads

    def cancel(self) -> None:
        self._cancelled.set()

    def wall_left(self) -> float | None:
        return None if self.wall_s is None else self.wall_s - (time.monotonic() - self._start)

    def stop_reason(self) -> str | None:
        if self._cancelled.is_set():
            return CANCELLED
        left = self.wall_left()
        if left is not None and left <= 0:
            return f"wall-time budget of {self.wall_s:g} s exhausted"
        if self.solver_s is not None and self.solver_spent >= self.solver_s:
            return f"solver-time budget of {self.solver_s:g} s exhausted"
        return None

    def charge(self, seconds: float) -> None:
        with self._charging:
            self.solver_spent += seconds


class BudgetChecker:
    def __init__(self, inner: Checker, budget: Budget):
        self.inner = inner
        self.budget = budget
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        reason = self.budget.stop_reason()
        if reason is not None:
            return Outcome(UNKNOWN, self.name, 0.0, reason=reason)
        left = self.budget.wall_left()
        outcome = self.inner.check(obligation, timeout_s if left is None else min(timeout_s, left))
        self.budget.charge(outcome.seconds)
        return outcome
