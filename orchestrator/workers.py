"""The server's workers: each is a thread of the server that owns one warm child process running one job at a
time (`orchestrator.job.run_sources`), and reports its events and result to the job store.

Why a process per worker and not only a thread: the trusted core builds its terms in z3's one main context,
which two jobs must not use at once; a child process also keeps a crash or a runaway job from taking the
server down (the child is killed and replaced, the job ends `unknown` saying so). The child stays warm
(torch, z3 and the frontends imported once) across jobs. A child whose server dies sees its pipe close and
exits, so a killed server leaves no verification running behind it.

Cancellation: the worker forwards a cancel to its child, which sets the job's token (the job ends `unknown`,
"cancelled", at its next stage or obligation). A child that has not stopped `CANCEL_GRACE_S` later (it is deep
in one step, a compiler or a reference capture) is killed and replaced, and the job ends the same way; so is
a child that does not finish within the job's timeout plus `GRACE_S`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import threading
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from lean_pool.budget import CANCELLED as CANCELLED_REASON
from lean_pool.budget import Budget
from lean_pool.cancel import CancelToken
from orchestrator.job import VERDICT, Event, run_sources, unknown
from orchestrator.jobs_db import CANCELLED, DONE, JobStore, Request, cancelled_result
from orchestrator.result import Result
from semantics.torch.capture import keep_warm

if TYPE_CHECKING:
    from actors.service import ClusterSpec

GRACE_S = 60.0        # beyond its own timeout, how long a job may take before its child is killed
CANCEL_GRACE_S = 2.0  # how long a cancelled job may take to stop by itself
POLL_S = 0.2          # how often a worker looks for a cancel while its child works
IDLE_S = 1.0          # how long an idle worker sleeps between looks at the queue (a submission wakes it)


def _child(conn: Connection, cluster: ClusterSpec | None = None) -> None:
    """A worker's child process: run the jobs the pipe brings, send back their events and results. With a
    `cluster`, each job's obligations go to its checker actors (`actors.service`). It keeps a warm capture
    worker (started now, while no job waits): a reference not captured before costs a fork, not seconds."""
    keep_warm()
    jobs: queue.Queue = queue.Queue()
    lock = threading.Lock()
    cancelled: set[str] = set()
    current: dict[str, CancelToken] = {}

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                os._exit(0)                  # the server is gone, and so is the point of this job
            if message[0] == "cancel":
                with lock:
                    cancelled.add(message[1])
                    token = current.get(message[1])
                if token is not None:
                    token.cancel()
            else:
                jobs.put(message)

    threading.Thread(target=read, name="lark-worker-pipe", daemon=True).start()
    sending = threading.Lock()

    def send(message: tuple) -> None:
        with sending:
            conn.send(message)

    while True:
        _, job_id, text = jobs.get()
        request = Request.from_json(text)
        token = CancelToken()
        with lock:
            current[job_id] = token
            if job_id in cancelled:
                token.cancel()

        def events(event: Event, job_id: str = job_id) -> None:
            if event.kind != VERDICT:            # the store writes the verdict event with the result
                send(("event", job_id, event.kind, event.data))

        checker, budget = _cluster_checker(cluster, request)
        result = run_sources(request.sources, request.timeout_s, events, token, request.solver_s, checker, budget)
        with lock:
            del current[job_id]
        send(("done", job_id, json.dumps(result.to_json())))


def _cluster_checker(cluster: ClusterSpec | None, request: Request) -> tuple[object | None, Budget | None]:
    """The job's checker and budget on the cluster's checker actors, or (None, None): in-process."""
    if cluster is None:
        return None, None
    from actors.service import fleet_checker

    budget = Budget(wall_s=request.timeout_s, solver_s=request.solver_s)
    return fleet_checker(cluster, budget), budget


class _Child:
    """The server's end of one child process."""

    def __init__(self, cluster: ClusterSpec | None = None):
        context = multiprocessing.get_context("spawn")     # never fork a process that runs gRPC threads
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_child, args=(theirs, cluster), name="lark-worker", daemon=True)
        self.process.start()
        theirs.close()

    def stop(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


class WorkerPool:
    def __init__(self, store: JobStore, workers: int, cluster: ClusterSpec | None = None):
        self.store = store
        self.cluster = cluster     # where jobs' obligations go (`lark serve --address`), None: in-process
        self._wake = threading.Condition()
        self._stopping = threading.Event()
        self._cancels: set[str] = set()
        self._threads = [threading.Thread(target=self._work, name=f"lark-worker-{i}", daemon=True)
                         for i in range(workers)]
        self.runs = 0            # verifications started by this server (a duplicate submission starts none)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self.notify()
        for thread in self._threads:
            thread.join(10)

    def notify(self) -> None:
        """A job was queued: wake an idle worker."""
        with self._wake:
            self._wake.notify()

    def cancel(self, job_id: str) -> None:
        """Forward a cancel to the worker running `job_id`, if one is."""
        with self._wake:
            self._cancels.add(job_id)

    def _work(self) -> None:
        child: _Child | None = _Child(self.cluster)     # started before any job, so that it is warm for the first
        try:
            while not self._stopping.is_set():
                with self._wake:
                    job_id = self.store.claim()
                    if job_id is None:
                        self._wake.wait(IDLE_S)
                        continue
                    self.runs += 1
                child = child or _Child(self.cluster)
                ended = self._run(child, job_id)
                with self._wake:
                    self._cancels.discard(job_id)
                if ended is None:        # the server is stopping: the job stays running, the next start resumes it
                    return
                result, state, alive = ended
                self.store.finish(job_id, result, state)
                if not alive:
                    child.stop()
                    child = None if self._stopping.is_set() else _Child(self.cluster)
        finally:
            if child is not None:
                child.stop()

    def _run(self, child: _Child, job_id: str) -> tuple[Result, str, bool] | None:
        """Run one job on `child`: (its result, its final state, whether the child may be reused), or None when
        the server stops first."""
        request = self.store.request(job_id)
        name = request.sources.name
        child.conn.send(("run", job_id, request.to_json()))
        deadline = time.monotonic() + request.timeout_s + GRACE_S
        asked: float | None = None           # when the cancel was forwarded
        while True:
            if asked is None and self._take_cancel(job_id):
                child.conn.send(("cancel", job_id))
                asked = time.monotonic()
            if asked is not None and time.monotonic() > asked + CANCEL_GRACE_S:
                return cancelled_result(name), CANCELLED, False
            if self._stopping.is_set():
                return None
            try:
                ready = child.conn.poll(POLL_S)
                message = child.conn.recv() if ready else None
            except (EOFError, OSError):
                return unknown(name, f"internal error: the worker process died (exit {child.process.exitcode})",
                               0.0), DONE, False
            if message is None:
                if time.monotonic() > deadline:
                    return unknown(name, f"the job ran past its timeout of {request.timeout_s:g} s and was killed",
                                   request.timeout_s), DONE, False
                continue
            if message[0] == "event":
                _, _, kind, data = message
                self.store.add_event(job_id, kind, data)
                continue
            result = Result(**json.loads(message[2]))
            cancelled = asked is not None and result.verdict == "unknown" and result.reason == CANCELLED_REASON
            return result, CANCELLED if cancelled else DONE, True

    def _take_cancel(self, job_id: str) -> bool:
        with self._wake:
            if job_id in self._cancels:
                self._cancels.discard(job_id)
                return True
        return False
