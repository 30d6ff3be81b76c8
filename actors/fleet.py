"""A fleet: verify actors, checker actors and the cache actor, and the loop that feeds tasks to them.

Backpressure: each verify actor holds at most `DEPTH` submitted tasks (one running, the rest queued in
Ray), the driver keeps everything else, so a 10,000-task batch does not become 10,000 pending calls and a
lost actor takes at most `DEPTH` tasks with it. Failures, in layers: Ray restarts a dead actor and re-runs
the calls it held (`max_restarts`, `max_task_retries`); when that is exhausted the fleet replaces the actor
and requeues its tasks, at most `MAX_ATTEMPTS` times per task; a task that still cannot run is reported
lost (`on_done` with a message), never silently dropped. An exception raised by the verifier itself is a
bug, not a transient error: reported at once, not retried.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

import ray
from ray.exceptions import RayError, RayTaskError

from actors.cache import start_cache
from actors.checker import CheckerActor
from actors.llm import endpoint_lease
from actors.verifier import VerifyActor
from lean_pool.pool import PoolConfig
from orchestrator.llm.chat import LLMConfig
from orchestrator.result import Result

MAX_ATTEMPTS = 3
DEPTH = 2          # tasks submitted to one verify actor at a time: one running, one queued
OnDone = Callable[[str, Result | None, str | None], None]   # manifest, result or None, failure message


class Fleet:
    def __init__(self, verifiers: int, checkers: int | None = None):
        # Named actors: a restarted verify actor finds them by name (actor handles as constructor arguments
        # would live in the object store, and a restart fails if those are lost). The prefix keeps
        # concurrent fleets on one cluster apart.
        self.prefix = f"lark-{uuid.uuid4().hex[:12]}"
        self.cache = start_cache(f"{self.prefix}-cache")
        self.checkers = [CheckerActor.options(name=f"{self.prefix}-checker-{i}", scheduling_strategy="SPREAD")
                         .remote(PoolConfig()) for i in range(checkers or verifiers)]
        self.verifiers = [self._verifier() for _ in range(verifiers)]

    def _verifier(self):
        return VerifyActor.options(scheduling_strategy="SPREAD").remote(self.prefix, len(self.checkers))

    def run(self, manifests: list[str], timeout_s: float, solver_s: float | None, on_done: OnDone,
            certificate: Path | None = None, witness: Path | None = None,
            documents: Mapping[str, tuple[Path, Path]] | None = None, llm: LLMConfig | None = None) -> None:
        """Run every manifest; `on_done` is called once per manifest, in completion order. `certificate` and
        `witness` are output paths for a single task (`lark verify --workers`); `documents`, per manifest,
        the (certificate, witness) paths of a batch's tasks; `llm`, the endpoint every job's LLM provers
        share (one pool actor, `actors.llm`)."""
        with endpoint_lease(llm):   # the endpoint's pool actor outlives every job (actors.llm)
            waiting = deque((m, 0) for m in manifests)          # (manifest, attempts so far)
            inflight: dict = {}                                  # ObjectRef -> (manifest, slot, attempts, actor)
            load = [0] * len(self.verifiers)
            while waiting or inflight:
                for slot, actor in enumerate(self.verifiers):
                    while waiting and load[slot] < DEPTH:
                        manifest, attempts = waiting.popleft()
                        cert, wit = documents[manifest] if documents else (certificate, witness)
                        ref = actor.run.remote(manifest, timeout_s, solver_s, cert, wit, llm)
                        inflight[ref] = (manifest, slot, attempts + 1, actor)
                        load[slot] += 1
                [done], _ = ray.wait(list(inflight), num_returns=1)
                manifest, slot, attempts, actor = inflight.pop(done)
                load[slot] -= 1
                try:
                    result = ray.get(done)
                except RayTaskError as exc:
                    on_done(manifest, None, f"the verifier failed: {exc}")
                except RayError as exc:
                    self._replace(slot, actor)
                    if attempts < MAX_ATTEMPTS:
                        waiting.appendleft((manifest, attempts))
                    else:
                        on_done(manifest, None, f"lost after {attempts} attempts ({type(exc).__name__})")
                else:
                    on_done(manifest, result, None)

    def _replace(self, slot: int, actor) -> None:
        """A new actor for `slot`, unless an earlier failure of the same actor already replaced it."""
        if self.verifiers[slot] is not actor:
            return
        ray.kill(actor, no_restart=True)
        self.verifiers[slot] = self._verifier()

    def statuses(self) -> list[dict]:
        return ray.get([v.status.remote() for v in self.verifiers])

    def checker_health(self) -> list[dict]:
        return ray.get([c.health.remote() for c in self.checkers])

    def cancel(self) -> None:
        ray.get([v.cancel.remote() for v in self.verifiers])
