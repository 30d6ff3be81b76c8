"""Capture of a KernelBench-style reference as a core-ATen graph, in a sandboxed subprocess.

Reference files are code, and the verifier must not run untrusted code in its own process: capture
starts `semantics.torch._capture_main` with a scrubbed environment, in a fresh temporary directory, in
its own process group (so a timeout kills the reference and anything it started), under CPU, file-size
and core-dump limits and a wall-clock timeout. The subprocess first enters the sandbox of sandbox.py (no
network, no writes outside that directory, its own PID namespace); what a reference tried that the
sandbox refused is the capture's error. The worker never materializes a tensor: shapes and dtypes
are all the verifier needs, and KernelBench inputs reach gigabytes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from semantics.torch.graph import RefGraph, ScalarSpec, TensorSpec

__all__ = [
    "CaptureTimedOut", "RefGraph", "ReferenceError", "ScalarSpec", "TensorSpec", "capture_reference",
    "capture_references",
]

_WARM_UP_S = 60.0          # importing torch and a first export, before any reference runs
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]   # the directory holding `semantics/`
_MAX_STDERR = 4000


class ReferenceError(Exception):  # the task contract's name (it shadows the builtin weakref error)
    """The reference could not be captured; the message says why (for the user, not a traceback)."""


class CaptureTimedOut(ReferenceError):
    """The capture ran out of its time: bad input when the reference itself runs too long, the end of the
    job's budget when what was left of the job's timeout bounded it (the job decides which)."""


def capture_reference(source: Path, timeout_s: float = 180.0) -> RefGraph:
    """The core-ATen graph of the reference file `source`; raises ReferenceError when it cannot be had.
    `timeout_s` bounds the whole capture in wall-clock time, torch's start included, so that a job can
    give it what is left of its own timeout."""
    path = Path(source).resolve()
    if not path.is_file():
        raise ReferenceError(f"reference file not found: {source}")
    result = _run_worker([path], timeout_s, wall_s=timeout_s)[0]
    if isinstance(result, ReferenceError):
        raise result
    return result


def capture_references(sources: Sequence[Path], timeout_s: float = 180.0) -> list[RefGraph | ReferenceError]:
    """Capture several references with one warm worker (each still in its own forked process, so none can
    affect another's graph). `timeout_s` applies to each reference; a failure is returned in its place."""
    results: list[RefGraph | ReferenceError | None] = [None] * len(sources)
    todo = []
    for i, source in enumerate(sources):
        path = Path(source).resolve()
        if path.is_file():
            todo.append((i, path))
        else:
            results[i] = ReferenceError(f"reference file not found: {source}")
    if todo:
        wall_s = _WARM_UP_S + timeout_s * len(todo)
        for (i, _), outcome in zip(todo, _run_worker([p for _, p in todo], timeout_s, wall_s), strict=True):
            results[i] = outcome
    return results


def _run_worker(paths: list[Path], timeout_s: float, wall_s: float) -> list[RefGraph | ReferenceError]:
    with tempfile.TemporaryDirectory(prefix="lark-capture-") as tmp:
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.pathsep.join(_import_path()),
            "HOME": tmp,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
        }
        cmd = [sys.executable, "-m", "semantics.torch._capture_main", "--writable", tmp,
               "--timeout", str(timeout_s), *map(str, paths)]
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=wall_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.communicate()
            return [CaptureTimedOut(f"reference capture timed out after {round(wall_s, 1):g} s")] * len(paths)
        _kill_group(proc.pid)   # whatever a reference started and left behind
    _pass_on_warnings(err)
    if proc.returncode != 0:
        tail = err.decode(errors="replace")[-_MAX_STDERR:]
        return [ReferenceError(f"capture worker failed (exit status {proc.returncode}): {tail}")] * len(paths)
    try:
        return [_failure(e) if "error" in e else RefGraph.from_data(e["graph"]) for e in json.loads(out)]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return [ReferenceError(f"capture worker gave a malformed result: {exc!r}")] * len(paths)


def _failure(entry: dict) -> ReferenceError:
    return (CaptureTimedOut if entry.get("timed_out") else ReferenceError)(entry["error"])


def _pass_on_warnings(stderr: bytes) -> None:
    """A sandbox mechanism the kernel lacks is said loudly: the reference ran less confined than asked."""
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("lark: sandbox:"):
            print(line, file=sys.stderr)


def _import_path() -> list[str]:
    """The worker imports what this process imports (the same torch), with this package first."""
    return [str(_PACKAGE_ROOT)] + [p for p in sys.path if p and os.path.isdir(p) and p != str(_PACKAGE_ROOT)]


def _kill_group(pgid: int) -> None:
    """The group is the worker's own session (start_new_session): it holds only what the capture ran."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
