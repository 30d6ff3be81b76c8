"""A hard wall-clock deadline for a stage that runs Python code which never looks at the budget.

The budget (lean_pool.budget) stops obligations at the deadline, but the core also spends time between
obligations — rewriting terms, folding reductions, replaying a witness on the concrete interpreter — and a
hard kernel can spend many seconds there (tried: `--timeout 20` ended after 33 s). `within` runs such a
stage and, when the deadline passes, raises `DeadlinePassed` inside the thread running it (CPython's
`PyThreadState_SetAsyncExc`, delivered at the thread's next bytecode). A call into z3 runs no bytecode, and
the core's own term work (simplifying, checking a model in z3's main context) can run for minutes past the
deadline (tried: `--timeout 400` ended after 489 s), so each firing also interrupts z3's main context
(`Z3_interrupt`, scoped to the operation in progress: the context stays usable). The stage is abandoned,
never trusted: the caller turns
`DeadlinePassed` into `unknown`. It derives from BaseException so that no `except Exception` in the stage
can take it for an ordinary failure and go on.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import z3

T = TypeVar("T")
AGAIN_S = 0.5     # after the deadline, the interruption is raised again this often until the stage has ended
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.c_void_p)   # an exception class's address; None clears


class DeadlinePassed(BaseException):  # noqa: N818 - an interruption like KeyboardInterrupt, not an error
    """Raised inside a stage run by `within` when its deadline passes."""


class _Watchdog:
    """Arms a timer that interrupts the calling thread; disarming clears an interruption not yet raised."""

    def __init__(self, seconds: float, on_pass: Callable[[], None] | None = None):
        self._on_pass = on_pass
        self._thread = threading.get_ident()
        self._lock = threading.Lock()
        self._armed = True
        self._fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            first, self._fired = not self._fired, True
            _set_async_exc(self._thread, id(DeadlinePassed))
            z3.main_ctx().interrupt()
            # raised inside a __del__ or a callback, the exception is printed and dropped: raise it again
            self._timer = threading.Timer(AGAIN_S, self._fire)
            self._timer.daemon = True
            self._timer.start()
        if first and self._on_pass is not None:
            self._on_pass()

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *_exc) -> None:
        with self._lock:
            self._armed = False
            self._timer.cancel()
            if self._fired:                       # delivered or still pending: a pending one is cleared
                _set_async_exc(self._thread, None)


def within(deadline: float | None, stage: Callable[[], T], on_pass: Callable[[], None] | None = None) -> T:
    """`stage()`, interrupted by `DeadlinePassed` once `time.monotonic()` passes `deadline` (None: no limit).
    `on_pass`, called from the timer's thread at that moment, can stop what bytecode checks cannot reach
    (a cancel token's running z3 query). Raises DeadlinePassed at once when the deadline has already passed."""
    if deadline is None:
        return stage()
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed
    with _Watchdog(left, on_pass):
        return stage()
