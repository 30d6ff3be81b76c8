"""Checker actors: a `lean_pool.Pool` of warm solver workers behind a Ray actor, and the `Checker` that a
verify actor uses to reach them.

Obligations travel as SMT-LIB text with witness definitions (`Obligation.smt2_with_witnesses`), answers
as JSON (`lean_pool.wire`), so nothing z3-specific is pickled. The pool owns timeouts, memory limits and
worker crashes; Ray owns the actor: `max_restarts` brings a killed actor back and `max_task_retries`
re-runs the obligation it was solving. An actor that stays unreachable costs the obligation an `unknown`,
never a wrong answer.

Cancellation crosses the actor boundary by request id: each obligation is sent with one, and a caller whose
token is cancelled (`lean_pool.cancel`: its search closed the goal another way) calls the actor's `cancel`,
which runs in the control group while `solve` is busy, and kills the pool worker solving that request. A
cancel that arrives before its request is remembered (a bounded memory), so the request returns at once.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections import OrderedDict

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from lean_pool import cancel as cancellation
from lean_pool.cancel import CancelToken, cancelled, stoppable
from lean_pool.checker import UNKNOWN, Obligation, Outcome
from lean_pool.pool import Pool, PoolChecker, PoolConfig
from lean_pool.wire import outcome_of, unknown_answer

ANSWER_GRACE_S = 30.0   # beyond the obligation's own timeout: queueing behind other callers, a restart
EARLY_CANCELS = 4096    # cancels remembered for requests not started yet (or long finished: they are dropped)


# num_cpus=0: a checker actor solves while the verify actor that asked waits, so the pair uses about one
# core; reserving a CPU here would halve the verify actors a node can hold.
@ray.remote(num_cpus=0, max_restarts=4, max_task_retries=2, concurrency_groups={"control": 1})
class CheckerActor:
    def __init__(self, config: PoolConfig):
        self.pool = Pool(config)
        self._lock = threading.Lock()
        self._running: dict[str, CancelToken] = {}
        self._early: OrderedDict[str, None] = OrderedDict()

    def solve(self, smt2: str, timeout_s: float, request: str | None = None) -> dict:
        token = CancelToken()
        with self._lock:
            if request in self._early:
                del self._early[request]
                return unknown_answer("cancelled")
            if request is not None:
                self._running[request] = token
        reset = cancellation.CURRENT.set(token)   # (through the module: Ray pickles this class by value)
        try:
            return self.pool.solve(smt2, timeout_s)
        finally:
            cancellation.CURRENT.reset(reset)
            with self._lock:
                self._running.pop(request, None)

    @ray.method(concurrency_group="control")
    def cancel(self, request: str) -> None:
        """Stop `request`: kill the worker solving it, or, if it has not started, answer it `cancelled`."""
        with self._lock:
            token = self._running.get(request)
            if token is None:
                self._early[request] = None
                while len(self._early) > EARLY_CANCELS:
                    self._early.popitem(last=False)
        if token is not None:
            token.cancel()

    @ray.method(concurrency_group="control")
    def health(self) -> dict:
        """Answered even while an obligation is being solved (its own concurrency group)."""
        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(),
                "workers": [{"pid": w.pid, "busy": w.busy} for w in self.pool.workers()],
                "stats": dict(self.pool.stats)}


class RemoteChecker:
    """Sends each obligation to the next checker actor in turn; if one cannot answer (dead beyond its
    restarts, or silent past the deadline) the next is tried, and when none can, the outcome is unknown."""

    name = PoolChecker.name

    def __init__(self, actors: list):
        self.actors = actors
        self._turn = itertools.count()

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        text = obligation.smt2_with_witnesses()
        failures = []
        for _ in self.actors:
            if cancelled():
                return Outcome(UNKNOWN, self.name, 0.0, reason="cancelled")
            actor = self.actors[next(self._turn) % len(self.actors)]
            request = uuid.uuid4().hex
            try:
                with stoppable(lambda actor=actor, request=request: actor.cancel.remote(request)):
                    answer = ray.get(actor.solve.remote(text, timeout_s, request),
                                     timeout=timeout_s + ANSWER_GRACE_S)
            except (RayActorError, GetTimeoutError) as exc:
                failures.append(type(exc).__name__)
                continue
            return outcome_of(answer, self.name)
        return Outcome(UNKNOWN, self.name, 0.0, reason=f"no checker actor answered ({', '.join(failures)})")
