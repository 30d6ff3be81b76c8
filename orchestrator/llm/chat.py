"""The chat endpoint an agent talks to, and the per-job budget of calls, tokens and wall time. Untrusted.

`OpenAIChat` speaks the OpenAI-compatible chat API through the `openai` client, configured by
`OPENAI_BASE_URL`, `OPENAI_API_KEY` and `LARK_LLM_MODEL`. Retries on 429, 5xx, connection errors and
timeouts are the client's own (`max_retries`, exponential backoff that honours `retry-after`); a request
that still fails is an `EndpointError`, which costs the goal its proposal and nothing else.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, replace
from typing import Protocol

DEFAULT_MODEL = "gpt-4o-mini"


class EndpointError(RuntimeError):
    """The endpoint gave no usable reply (after the client's retries), or the budget forbids another call."""


@dataclass(frozen=True)
class LLMConfig:
    base_url: str | None
    api_key: str
    model: str
    calls: int = 20                 # per job
    tokens: int = 200_000           # per job (prompt + completion, as the endpoint counts them)
    wall_s: float = 300.0           # per job, from the first call
    request_timeout_s: float = 60.0
    max_retries: int = 3
    per_goal: int = 3               # calls for one goal's proposals and refinements
    concurrency: int = 4            # requests in flight per endpoint (the Ray prover pool's limit)

    @staticmethod
    def from_env(calls: int | None = None) -> LLMConfig:
        """The endpoint from the environment; `calls` (`--llm-budget`) overrides the call budget."""
        base = os.environ.get("OPENAI_BASE_URL") or None
        config = LLMConfig(base, os.environ.get("OPENAI_API_KEY") or "none",
                           os.environ.get("LARK_LLM_MODEL") or DEFAULT_MODEL)
        return config if calls is None else replace(config, calls=calls)


@dataclass(frozen=True)
class Reply:
    text: str
    tokens: int


class Chat(Protocol):
    def complete(self, messages: list[dict], response_format: dict) -> Reply: ...


class OpenAIChat:
    """One endpoint through the `openai` client (built lazily: a job that asks nothing opens nothing)."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self._client = None

    def _open(self):
        if self._client is None:
            from openai import OpenAI
            self._client = OpenAI(base_url=self.config.base_url, api_key=self.config.api_key,
                                  timeout=self.config.request_timeout_s, max_retries=self.config.max_retries)
        return self._client

    def complete(self, messages: list[dict], response_format: dict) -> Reply:
        import openai
        try:
            response = self._open().chat.completions.create(model=self.config.model, messages=messages,
                                                            response_format=response_format, temperature=0)
        except openai.OpenAIError as exc:
            raise EndpointError(f"{type(exc).__name__}: {str(exc)[:200]}") from None
        choices = getattr(response, "choices", None) or []
        text = choices[0].message.content if choices and choices[0].message else None
        usage = getattr(response, "usage", None)
        return Reply(text or "", int(getattr(usage, "total_tokens", 0) or 0))


class Usage:
    """A job's LLM spending, shared by its goals (thread-safe); `admit` before each call."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.calls = 0
        self.tokens = 0
        self._start: float | None = None
        self._lock = threading.Lock()

    def admit(self) -> None:
        with self._lock:
            self._start = self._start if self._start is not None else time.monotonic()
            stop = self.stop_reason()
            if stop is not None:
                raise EndpointError(stop)
            self.calls += 1

    def charge(self, tokens: int) -> None:
        with self._lock:
            self.tokens += tokens

    def stop_reason(self) -> str | None:
        if self.calls >= self.config.calls:
            return f"LLM call budget of {self.config.calls} spent"
        if self.tokens >= self.config.tokens:
            return f"LLM token budget of {self.config.tokens} spent"
        if self._start is not None and time.monotonic() - self._start >= self.config.wall_s:
            return f"LLM wall-time budget of {self.config.wall_s:g} s spent"
        return None

    def stats(self) -> dict:
        return {"llm_calls": self.calls, "llm_tokens": self.tokens}
