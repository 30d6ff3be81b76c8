"""One solver worker process and the two ways it can fail: too slow, or gone.

The process runs `lean_pool.worker` in its own session (so its process group is its own and `stop` takes
down anything it started) with a memory limit. Reading an answer honours a deadline without threads: the
pipe is polled with `select`, so a worker stuck in the solver is noticed on time and killed, never reused.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

STARTUP_S = 60.0   # python + z3 import; generous, a loaded machine can be slow


class WorkerTimeout(Exception):
    """No answer before the deadline; the worker may still be busy and must be killed."""


class WorkerCrashed(Exception):
    """The worker exited or broke the protocol; the message says how."""


class WorkerProcess:
    def __init__(self, memory_mb: int | None):
        cmd = [sys.executable, "-m", "lean_pool.worker", "--memory-mb", str(memory_mb or 0)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True, bufsize=0)
        self.served = 0          # obligations answered, for recycling
        self.busy = False        # an obligation is in flight (read by tests and actor health checks)
        self.interrupted = False  # killed by `interrupt`: its query was cancelled, it is not a crash
        self._ready = False
        self._pending = b""
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ask(self, smt2: str, timeout_s: float) -> dict:
        """The worker's answer to one obligation; raises WorkerTimeout or WorkerCrashed."""
        if not self._ready:
            self._read_line(time.monotonic() + STARTUP_S)
            self._ready = True
        self._next_id += 1
        request = json.dumps({"id": self._next_id, "smt2": smt2, "timeout_s": timeout_s}) + "\n"
        self.busy = True
        try:
            self.proc.stdin.write(request.encode())
            self.proc.stdin.flush()
            answer = json.loads(self._read_line(time.monotonic() + timeout_s))
        except BrokenPipeError as exc:
            raise WorkerCrashed(self._exit_description()) from exc
        except ValueError as exc:
            raise WorkerCrashed(f"protocol error: {exc}") from exc
        finally:
            self.busy = False
        if answer.pop("id", None) != self._next_id:
            raise WorkerCrashed("protocol error: answer to another request")
        self.served += 1
        return answer

    def _read_line(self, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout()
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerCrashed(self._exit_description())
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _exit_description(self) -> str:
        """How the worker ended (it closed its pipe, so it is exiting: wait for it briefly)."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed its pipe but did not exit"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"

    def interrupt(self) -> None:
        """Stop the query in flight by killing the worker (safe from another thread): a solver deep in a
        query cannot be told to stop, and a killed worker is never reused. `ask` then raises WorkerCrashed
        and the pool, seeing `interrupted`, answers `cancelled` instead of requeueing."""
        self.interrupted = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """Kill the worker's whole process group and reap it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
