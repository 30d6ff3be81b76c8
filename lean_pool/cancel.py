"""Cancellation that reaches a running solver: a token a caller sets for the obligations checked on its behalf.

A search explores alternative proposals at once; when one closes the goal, the others are cancelled. Saying
so between obligations is not enough — a loser may be deep in a solver call for its whole timeout. A backend
that can stop a running query (z3 through `Context.interrupt`, which is safe to call from another thread)
registers its stop function with the token current in the calling context (`CURRENT`, a context variable,
so each thread or task of a search has its own), and the token calls it when cancelled. A cancelled query
answers `unknown` (STYLE 7): cancellation never produces a fact.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class CancelToken:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._stops: dict[int, Callable[[], None]] = {}
        self._next = 0

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            stops = list(self._stops.values())
        for stop in stops:
            stop()

    @contextmanager
    def stopping(self, stop: Callable[[], None]) -> Iterator[None]:
        """While inside, `cancel` calls `stop` (at once, if the token is already cancelled)."""
        with self._lock:
            handle, self._next = self._next, self._next + 1
            self._stops[handle] = stop
            already = self._cancelled
        if already:
            stop()
        try:
            yield
        finally:
            with self._lock:
                del self._stops[handle]


CURRENT: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("lark_cancel", default=None)


def cancelled() -> bool:
    """Whether the caller's token, if any, is already cancelled (then there is no point starting a query)."""
    token = CURRENT.get()
    return token is not None and token.cancelled


@contextmanager
def stoppable(stop: Callable[[], None]) -> Iterator[None]:
    """Register `stop` with the current token, if there is one."""
    token = CURRENT.get()
    if token is None:
        yield
        return
    with token.stopping(stop):
        yield
