"""A task's slow inputs, started before the verifier is imported (issue 19, item 9: cold start).

`lark verify` spends its first half second or more importing the verifier (z3, the PTX parser, the ATen
semantics), and nvcc and the reference's capture subprocess need none of it. `begin` starts both from the
manifest alone, each on a daemon thread (a process that ends early does not wait for them; nvcc and the
capture have time limits of their own), and `pipeline.prepare` takes the started work instead of doing it
again. Work is keyed by the manifest's absolute path and handed out once. Nothing is decided here: a
manifest that does not load starts nothing (the job reports it), and an error of the work is raised where
`prepare` takes it, in stage order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from orchestrator.capture_cache import capture_cached
from orchestrator.frontends import NVCC_TIMEOUT_S, compile_kernel
from orchestrator.manifest import IntakeError, load_task

T = TypeVar("T")
CAPTURE_S = 180.0      # the capture's own limit, as `prepare` gives it
CAPTURE_MIN_S = 1.0    # a capture always gets this long (a cached one takes none of it)
COMPILE, CAPTURE = "compile", "capture"

_started: dict[tuple[str, Path], Future] = {}
_lock = threading.Lock()


def in_background(work: Callable[[], T]) -> Future[T]:
    """`work` started on a daemon thread, its result or exception in the future returned."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever takes the future, which raises it
            future.set_exception(exc)

    threading.Thread(target=run, name="lark-prestart", daemon=True).start()
    return future


def begin(manifest: Path, timeout_s: float) -> None:
    """Start the compile and (for a task with a reference) the capture of `manifest`'s task, each within
    `timeout_s` seconds (the task's whole budget: the job's deadline, set later, ends no earlier)."""
    try:
        task = load_task(manifest)
    except (IntakeError, OSError):
        return
    started = {COMPILE: in_background(lambda: compile_kernel(task.kernel, min(NVCC_TIMEOUT_S, timeout_s)))}
    if not task.safety_only:
        capture_s = max(min(CAPTURE_S, timeout_s), CAPTURE_MIN_S)
        started[CAPTURE] = in_background(lambda: capture_cached(task.reference.source, capture_s))
    with _lock:
        _started.update({(kind, Path(manifest).absolute()): future for kind, future in started.items()})


def take(kind: str, manifest: Path) -> Future | None:
    """The `kind` work `begin` started for `manifest`, once; None when none was started."""
    with _lock:
        return _started.pop((kind, Path(manifest).absolute()), None)
