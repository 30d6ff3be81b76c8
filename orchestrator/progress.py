"""Progress of a long stage for the person waiting: obligations checked so far and the time spent.

The core announces its stages (job.STAGE events) but a stage such as equivalence can check hundreds of
obligations for minutes; `Counting` wraps the job's checker and, at most every `EVERY_S` seconds, reports
how many obligations have been checked and how much of the wall budget is spent. How many a stage will
check is not known in advance (the core derives them as it goes), so no total is claimed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from lean_pool.checker import Checker, Obligation, Outcome

EVERY_S = 2.0


class Counting:
    """A checker that counts the obligations through it and calls `tick(checked, elapsed_s)` now and then. It
    keeps each (obligation, outcome) in `log`, so a run the wall-time budget stops can still show which were
    decided (`lark verify --show obligations`)."""

    def __init__(self, inner: Checker, tick: Callable[[int, float], None], every_s: float = EVERY_S):
        self.inner = inner
        self.name = inner.name
        self.checked = 0
        self.log: list[tuple[Obligation, Outcome]] = []
        self._tick = tick
        self._every_s = every_s
        self._start = self._last = time.monotonic()
        self._lock = threading.Lock()          # a search checks obligations on several threads

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        outcome = self.inner.check(obligation, timeout_s)
        now = time.monotonic()
        with self._lock:
            self.checked += 1
            self.log.append((obligation, outcome))
            due = now - self._last >= self._every_s
            if due:
                self._last = now
            checked = self.checked
        if due:
            self._tick(checked, now - self._start)
        return outcome
