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
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from semantics.torch.graph import RefGraph, ScalarSpec, TensorSpec, frame_complete, unframed

__all__ = [
    "CaptureTimedOut", "RefGraph", "ReferenceError", "ScalarSpec", "TensorSpec", "capture_reference",
    "capture_references", "keep_warm",
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
    result = _kept.capture(path, timeout_s) if _kept else _run_worker([path], timeout_s, wall_s=timeout_s)[0]
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


def _start_worker(tmp: str, arguments: list[str], **pipes) -> subprocess.Popen:
    """The capture subprocess, scrubbed environment, `tmp` its only writable directory, its own session."""
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
    cmd = [sys.executable, "-m", "semantics.torch._capture_main", "--writable", tmp, *arguments]
    return subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, start_new_session=True, **pipes)


def _run_worker(paths: list[Path], timeout_s: float, wall_s: float) -> list[RefGraph | ReferenceError]:
    with tempfile.TemporaryDirectory(prefix="lark-capture-") as tmp:
        proc = _start_worker(tmp, ["--timeout", str(timeout_s), *map(str, paths)], stdin=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
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
        return [_outcome(entry) for entry in json.loads(out)]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return [ReferenceError(f"capture worker gave a malformed result: {exc!r}")] * len(paths)


def _outcome(entry: dict) -> RefGraph | ReferenceError:
    """One worker entry read: its graph, or the error it names (raises on a malformed entry)."""
    if "error" in entry:
        return (CaptureTimedOut if entry.get("timed_out") else ReferenceError)(entry["error"])
    return RefGraph.from_data(entry["graph"])


def keep_warm() -> None:
    """From now on this process captures through one warm worker (`WarmCapture`), started now so that it
    warms up while nothing waits for it. For long-lived processes (a server's workers, Ray actors): a new
    reference then costs a fork, not torch's start and a first export (seconds)."""
    global _kept
    if _kept is None:
        _kept = WarmCapture()
        _kept.start()


def stop_warm() -> None:
    """Stop the warm worker `keep_warm` started, if any: captures are cold again (each its own worker). A
    test module that captures many references keeps one warm worker for its own tests only."""
    global _kept
    if _kept is not None:
        _kept.stop()
        _kept = None


class WarmCapture:
    """One capture worker in serve mode (`_capture_worker --serve`), kept across captures. Captures run one
    at a time, each in its own forked child as in a batch, so none can affect another's graph. A worker that
    dies or overruns a capture's wall time is killed (its session and PID namespace with it) and the next
    capture starts a new one."""

    SLACK_S = 2.0   # beyond a capture's own limit, how long the worker may take to answer before it is killed

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._ready = False
        self._stderr: list[str] = []

    @property
    def pid(self) -> int | None:
        """The worker's process id (tests: the same worker answered)."""
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        with self._lock:
            self._spawn()

    def capture(self, path: Path, timeout_s: float) -> RefGraph | ReferenceError:
        """`path`'s graph within `timeout_s` of wall time, the worker's warm-up included if it is not warm yet."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._spawn()
            try:
                if not self._ready:
                    self._ready = self._read(deadline).get("ready", False)
                left = max(deadline - time.monotonic(), 0.1)
                self._proc.stdin.write(json.dumps({"source": str(path), "timeout": left}).encode() + b"\n")
                self._proc.stdin.flush()
                return _outcome(self._read(time.monotonic() + left + self.SLACK_S))
            except TimeoutError:
                self._stop()
                return CaptureTimedOut(f"reference capture timed out after {round(timeout_s, 1):g} s")
            except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
                tail = "".join(self._stderr)[-_MAX_STDERR:]
                self._stop()
                return ReferenceError(f"capture worker failed: {exc!r} {tail}".strip())

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _spawn(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lark-capture-")
        self._proc = _start_worker(self._tmp.name, ["--serve"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        self._ready, self._stderr = False, []
        threading.Thread(target=self._drain, args=(self._proc, self._stderr), daemon=True,
                         name="lark-capture-stderr").start()

    @staticmethod
    def _drain(proc: subprocess.Popen, kept: list[str]) -> None:
        """The worker's stderr: sandbox warnings passed on, the rest kept for an error message."""
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            _pass_on_warnings(raw)
            kept.append(line)
            del kept[:-50]

    def _read(self, deadline: float) -> dict:
        """One length-prefixed answer; TimeoutError past `deadline`, EOFError when the worker is gone."""
        fd, data = self._proc.stdout.fileno(), b""
        while not frame_complete(data):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the capture worker exited")
            data += chunk
        return unframed(data)

    def stop(self) -> None:
        """Kill the worker (and whatever it started); a later capture starts a new one."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._proc is not None:
            _kill_group(self._proc.pid)
            self._proc.wait()
            for pipe in (self._proc.stdin, self._proc.stdout):
                pipe.close()
            self._proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


_kept: WarmCapture | None = None


def _pass_on_warnings(stderr: bytes) -> None:
    """A sandbox mechanism the kernel lacks is said loudly: the reference ran less confined than asked."""
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("lark: sandbox:"):
            print(line, file=sys.stderr)


def _import_path() -> list[str]:
    """The worker imports what this process imports (the same torch), with this package first."""
    return [str(_PACKAGE_ROOT)] + [p for p in sys.path if p and os.path.isdir(p) and p != str(_PACKAGE_ROOT)]


def _kill_group(pgid: int, settle_s: float = 2.0) -> None:
    """The group is the worker's own session (start_new_session): it holds only what the capture ran. Returns
    once none of it is still running (a killed process of the sandbox's PID namespace exits asynchronously),
    or after `settle_s`."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + settle_s
    while _group_running(pgid) and time.monotonic() < deadline:
        time.sleep(0.005)


def _group_running(pgid: int) -> bool:
    """Whether a process of the group is alive (not a zombie): /proc/PID/stat's state and process group."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
