"""Verify actors: each runs whole tasks (`orchestrator.job.run_verify`: frontend, capture, symbolic execution,
the core), one at a time, with its obligations going through the lemma-cache actor to the checker actors.

A task's result depends only on its inputs, so Ray may re-run one on a restarted actor (`max_restarts`,
`max_task_retries`) without changing any verdict. A control concurrency group answers `status` and
`cancel` while a task runs: health checks, tests, and cancellation through the job's token.
"""

from __future__ import annotations

import os
from pathlib import Path

import ray

from actors.cache import ActorLemmaStore
from actors.checker import RemoteChecker
from actors.llm import PooledChat
from lean_pool.budget import Budget
from lean_pool.cancel import CancelToken
from lean_pool.stack import assemble
from orchestrator.job import run_verify
from orchestrator.llm.chat import LLMConfig
from orchestrator.llm.plug import LLMProvers
from orchestrator.result import Result


@ray.remote(num_cpus=1, max_restarts=3, max_task_retries=2, concurrency_groups={"control": 1})
class VerifyActor:
    def __init__(self, fleet: str, checkers: int):
        """`fleet` is the name prefix of the fleet's cache and checker actors (see `actors.fleet`)."""
        self.cache = ray.get_actor(f"{fleet}-cache")
        self.checkers = [ray.get_actor(f"{fleet}-checker-{i}") for i in range(checkers)]
        self._current: str | None = None
        self._cancel: CancelToken | None = None

    def run(self, manifest: str, timeout_s: float, solver_s: float | None = None, certificate: Path | None = None,
            witness: Path | None = None, llm: LLMConfig | None = None) -> Result:
        """One task. With `llm`, its LLM provers talk through the endpoint's pool actor (`actors.llm`), so
        every job of the batch shares one rate limit."""
        budget = Budget(wall_s=timeout_s, solver_s=solver_s)
        provers = LLMProvers(llm, chat=PooledChat(llm)) if llm is not None else None
        self._current, self._cancel = manifest, CancelToken()
        try:
            checker = assemble(RemoteChecker(self.checkers), ActorLemmaStore(self.cache), budget)
            # The job's search checks as many alternatives at once as there are checker actors to solve them.
            return run_verify(Path(manifest), timeout_s, None, certificate, witness, checker=checker, budget=budget,
                              search_width=max(len(self.checkers), 1), cancel=self._cancel, llm=provers)
        finally:
            self._current = self._cancel = None

    @ray.method(concurrency_group="control")
    def status(self) -> dict:
        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(), "current": self._current}

    @ray.method(concurrency_group="control")
    def cancel(self) -> None:
        """Cancel the running task: it ends unknown ("cancelled"), its remaining obligations unasked."""
        if self._cancel is not None:
            self._cancel.cancel()
