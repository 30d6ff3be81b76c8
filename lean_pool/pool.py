"""A pool of warm solver workers behind the `Checker` interface (STYLE 10: a small policy, a small process).

Policy, in one place:
* a worker that misses an obligation's deadline is killed and replaced; the obligation's outcome is
  `unknown` with the reason — a timeout is a result for the search, never retried here;
* a worker that crashes (killed, out of memory, protocol error) is replaced and the obligation requeued on
  the fresh worker, at most `max_attempts` times in all; then the outcome is `unknown` naming the crash;
* a query cancelled by the caller's token (`lean_pool.cancel`: a search closed the goal another way) kills
  its worker, which is replaced; the outcome is `unknown`, "cancelled" — never requeued;
* a worker is recycled after `recycle_after` obligations, so solver state cannot grow without bound;
* every worker runs under a memory limit in its own session, and is stopped by killing its process group.
Callers on several threads share the pool; a caller waits for an idle worker (the pool's backpressure).
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from dataclasses import dataclass

from lean_pool.cancel import cancelled, stoppable
from lean_pool.checker import Obligation, Outcome
from lean_pool.process import WorkerCrashed, WorkerProcess, WorkerTimeout
from lean_pool.wire import outcome_of, unknown_answer


@dataclass(frozen=True)
class PoolConfig:
    size: int = 1
    memory_mb: int | None = 4096
    recycle_after: int = 500
    max_attempts: int = 2


class Pool:
    def __init__(self, config: PoolConfig = PoolConfig()):
        self.config = config
        self.stats: Counter[str] = Counter()        # solved, timeouts, crashes, cancelled, recycled
        self._lock = threading.Lock()
        self._live: set[WorkerProcess] = set()
        self._idle: queue.Queue[WorkerProcess] = queue.Queue()
        for _ in range(config.size):
            self._idle.put(self._spawn())

    def solve(self, smt2: str, timeout_s: float) -> dict:
        """An answer (see `lean_pool.wire`) for one obligation text."""
        crashes = []
        for _ in range(self.config.max_attempts):
            if cancelled():
                return unknown_answer("cancelled")
            worker = self._idle.get()
            try:
                with stoppable(worker.interrupt):
                    answer = worker.ask(smt2, timeout_s)
            except WorkerTimeout:
                self._replace(worker, "timeouts")
                return unknown_answer(f"timeout after {timeout_s:.3g} s (solver worker killed and replaced)",
                                      timeout_s)
            except WorkerCrashed as exc:
                if worker.interrupted:
                    self._replace(worker, "cancelled")
                    return unknown_answer("cancelled (solver worker killed and replaced)")
                self._replace(worker, "crashes")
                crashes.append(str(exc))
                continue
            self.stats["solved"] += 1
            if worker.interrupted:           # cancelled just after it answered: the answer stands
                self._replace(worker, "cancelled")
            elif worker.served >= self.config.recycle_after:
                self._replace(worker, "recycled")
            else:
                self._idle.put(worker)
            return answer
        limit = f"; memory limit {self.config.memory_mb} MB" if self.config.memory_mb else ""
        return unknown_answer(f"solver worker crashed {len(crashes)} times on this obligation "
                              f"({'; '.join(crashes)}{limit})")

    def workers(self) -> list[WorkerProcess]:
        """The live workers (their pids and whether busy), for health checks and tests."""
        with self._lock:
            return list(self._live)

    def close(self) -> None:
        with self._lock:
            live, self._live = self._live, set()
        for worker in live:
            worker.stop()

    def _spawn(self) -> WorkerProcess:
        worker = WorkerProcess(self.config.memory_mb)
        with self._lock:
            self._live.add(worker)
        return worker

    def _replace(self, worker: WorkerProcess, why: str) -> None:
        self.stats[why] += 1
        with self._lock:
            self._live.discard(worker)
        worker.stop()
        self._idle.put(self._spawn())


class PoolChecker:
    """The pool as a `Checker`. Same solver and settings as `Z3Checker`, hence the same backend name (and
    shared lemma-cache entries); outcomes carry witness values but no in-process z3 model."""

    name = "z3"

    def __init__(self, pool: Pool):
        self.pool = pool

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        return outcome_of(self.pool.solve(obligation.smt2_with_witnesses(), timeout_s), self.name)
