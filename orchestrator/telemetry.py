"""OpenTelemetry spans from LARK itself: job -> stage (property) -> search goal -> candidate -> obligation.

Off unless asked: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans go to that OTLP/HTTP endpoint (an
OpenTelemetry Collector, `infra/otel-collector.yaml`); otherwise every call here is a no-op that imports
nothing and records nothing. `configure(provider)` installs any SDK `TracerProvider` instead (tests use the
SDK's in-memory exporter). LARK's provider is its own, never the process-global one, so a host application's
tracing is left alone. The trusted core knows nothing of this: stages are traced from its progress callback,
obligations by a `Checker` wrapper (STYLE 8).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lean_pool.checker import Checker, Obligation, Outcome
from semantics.properties.common import PROPERTIES

_provider = None          # an opentelemetry TracerProvider, or None: tracing is off
_from_env_done = False


def configure(provider) -> None:
    """Trace with `provider` (an SDK TracerProvider), or not at all with None."""
    global _provider, _from_env_done
    _provider, _from_env_done = provider, True


def _tracer():
    global _provider, _from_env_done
    if not _from_env_done:
        _from_env_done = True
        if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            _provider = _otlp_provider()
    if _provider is None:
        return None
    return _provider.get_tracer("lark")


def _otlp_provider():
    """An SDK provider batching spans to the OTLP/HTTP endpoint the standard OTEL_* variables name."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                      "lark")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class Handle:
    """A started span (or nothing, when tracing is off) that can be made current on another thread."""

    def __init__(self, span=None):
        self.span = span

    def set_attributes(self, attributes: dict) -> None:
        if self.span is not None:
            self.span.set_attributes(attributes)

    def end(self, attributes: dict | None = None) -> None:
        if self.span is not None:
            if attributes:
                self.span.set_attributes(attributes)
            self.span.end()


def start(name: str, attributes: dict | None = None) -> Handle:
    """A span, child of the current one, that is not made current (end it with `Handle.end`)."""
    tracer = _tracer()
    return Handle(None if tracer is None else tracer.start_span(name, attributes=attributes))


@contextmanager
def span(name: str, attributes: dict | None = None) -> Iterator[Handle]:
    """A span that is current while inside."""
    tracer = _tracer()
    if tracer is None:
        yield Handle()
        return
    with tracer.start_as_current_span(name, attributes=attributes) as current:
        yield Handle(current)


def within(handle: Handle | None, call: Callable, *args):
    """`call(*args)` with `handle`'s span current (a search thread working for a candidate)."""
    if handle is None or handle.span is None:
        return call(*args)
    from opentelemetry import context, trace

    token = context.attach(trace.set_span_in_context(handle.span))
    try:
        return call(*args)
    finally:
        context.detach(token)


class Stages:
    """The core's progress callback as spans: each stage it announces is a span until the next one; a stage
    that checks one property names it (`lark.property`)."""

    def __init__(self, progress: Callable[[str], None] | None = None):
        self.progress = progress
        self._current: Handle | None = None
        self._token = None

    def __call__(self, stage: str) -> None:
        self.close()
        if self.progress is not None:
            self.progress(stage)
        tracer = _tracer()
        if tracer is None:
            return
        from opentelemetry import context, trace

        attributes = {"lark.stage": stage}
        if stage.replace(" ", "_") in PROPERTIES:
            attributes["lark.property"] = stage.replace(" ", "_")
        self._current = Handle(tracer.start_span("lark.stage", attributes=attributes))
        self._token = context.attach(trace.set_span_in_context(self._current.span))

    def close(self) -> None:
        if self._current is None:
            return
        from opentelemetry import context

        context.detach(self._token)
        self._current.end()
        self._current = self._token = None


class TracingChecker:
    """One span per obligation asked of `inner`, with its answer."""

    def __init__(self, inner: Checker):
        self.inner = inner
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        if _tracer() is None:
            return self.inner.check(obligation, timeout_s)
        with span("lark.obligation", {"lark.obligation.name": obligation.name,
                                      "lark.obligation.property": obligation.prop}) as current:
            outcome = self.inner.check(obligation, timeout_s)
            current.set_attributes({"lark.obligation.status": outcome.status, "lark.backend": outcome.backend,
                                    "lark.solver_seconds": outcome.seconds,
                                    "lark.cached": "unasked" if outcome.cached is None else str(outcome.cached),
                                    "lark.reason": outcome.reason or ""})
            return outcome
