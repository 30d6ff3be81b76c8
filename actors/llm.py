"""LLM prover actors: one pool per endpoint, so every job of a batch shares that endpoint's rate limit.

A pool is one named, detached-per-session actor per endpoint (`lark-llm-<digest of base URL and model>`)
whose `max_concurrency` is the endpoint's limit: the requests of all jobs on all nodes queue at it and at
most `LLMConfig.concurrency` are in flight at once. Jobs talk to it through `PooledChat`, a `Chat` like the
direct client, so the agent (orchestrator/llm/agent.py) runs unchanged in a verify actor. The actor only
relays chat requests; what comes back is a proposal that the job's own search and core check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import ray
from ray.exceptions import RayError

from orchestrator.llm.chat import EndpointError, LLMConfig, OpenAIChat, Reply

MARGIN_S = 30.0      # past the client's own timeouts and retries, a pooled call is given up


@ray.remote(num_cpus=0, max_restarts=-1)
class LLMProverActor:
    """Relays chat requests to one endpoint with the `openai` client (its own retries on 429/5xx/timeouts)."""

    def __init__(self, config: LLMConfig):
        self.chat = OpenAIChat(config)

    def complete(self, messages: list[dict], response_format: dict) -> tuple[str, int] | str:
        try:
            reply = self.chat.complete(messages, response_format)
        except EndpointError as exc:
            return str(exc)
        return reply.text, reply.tokens


def pool_name(config: LLMConfig) -> str:
    return "lark-llm-" + hashlib.sha256(f"{config.base_url}|{config.model}".encode()).hexdigest()[:16]


def endpoint_pool(config: LLMConfig):
    """The endpoint's pool actor, started by the first caller that asks for it.

    A named actor that is not detached lives as long as its creator holds a handle: a handle another process
    got by name does not keep it alive. So whoever runs several jobs against one endpoint (the batch driver,
    `actors.fleet.Fleet.run`) calls this first and holds the handle until its last job is done; otherwise the
    first job to finish would take the pool down under the others' feet (their calls failing with
    ActorDiedError, each costing its goal the proposal)."""
    return LLMProverActor.options(name=pool_name(config), get_if_exists=True,
                                  max_concurrency=max(config.concurrency, 1)).remote(config)


@contextmanager
def endpoint_lease(config: LLMConfig | None) -> Iterator[None]:
    """Hold the endpoint's pool actor (`endpoint_pool`) for the duration: jobs started inside find it by name,
    and it outlives each of them. Nothing to hold without an endpoint."""
    pool = endpoint_pool(config) if config is not None else None
    try:
        yield
    finally:
        del pool


class PooledChat:
    """A `Chat` whose requests go through the endpoint's pool actor."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.actor = endpoint_pool(config)
        self.timeout_s = config.request_timeout_s * (config.max_retries + 1) + MARGIN_S

    def complete(self, messages: list[dict], response_format: dict) -> Reply:
        try:
            answer = ray.get(self.actor.complete.remote(messages, response_format), timeout=self.timeout_s)
        except RayError as exc:     # includes GetTimeoutError
            raise EndpointError(f"LLM prover pool: {type(exc).__name__}") from None
        if isinstance(answer, str):
            raise EndpointError(answer)
        return Reply(*answer)
