"""OpenTelemetry metrics (issue 18 item 5): jobs by verdict, obligations, cache hits, LLM calls, job latency,
and the service's queue depth.

Off unless asked, like the spans (`orchestrator/telemetry.py`): `LARK_METRICS=console` prints them every
`LARK_METRICS_INTERVAL_S` seconds (default 60) on stderr, `LARK_METRICS=otlp` (or OTEL_EXPORTER_OTLP_ENDPOINT
with `LARK_METRICS` unset) sends them to the OTLP/HTTP endpoint the standard OTEL_* variables name;
otherwise every call here is a no-op that imports nothing. `configure(provider)` installs any SDK
`MeterProvider` instead (tests read it with the SDK's in-memory reader). The provider is LARK's own, never
the process-global one. Every job reports once, when it ends (`record_job`, called by the job runner the CLI,
the Ray actors and the server's workers share), from whichever process ran it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from orchestrator.result import Result

_instruments = None       # name -> instrument, once a provider is configured
_configured = False


def configure(provider) -> None:
    """Record with `provider` (an SDK MeterProvider), or not at all with None."""
    global _instruments, _configured
    _configured = True
    _instruments = None if provider is None else _make(provider.get_meter("lark"))


def _make(meter) -> dict:
    return {
        "jobs": meter.create_counter("lark.jobs", unit="{job}", description="finished jobs, by verdict"),
        "obligations": meter.create_counter("lark.obligations", unit="{obligation}",
                                            description="obligations checked, by verdict of their job"),
        "cache_hits": meter.create_counter("lark.cache_hits", unit="{obligation}",
                                           description="obligations answered by the lemma cache"),
        "llm_calls": meter.create_counter("lark.llm_calls", unit="{call}", description="LLM prover calls"),
        "latency": meter.create_histogram("lark.job.duration", unit="s", description="wall time of a job"),
        "meter": meter,
    }


def _from_env():
    """The provider the environment asks for, or None."""
    kind = os.environ.get("LARK_METRICS") or ("otlp" if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") else "")
    if kind not in ("console", "otlp"):
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    if kind == "otlp":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        exporter = OTLPMetricExporter()
    else:
        exporter = ConsoleMetricExporter()
    interval_ms = float(os.environ.get("LARK_METRICS_INTERVAL_S", "60")) * 1000
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=interval_ms)
    return MeterProvider(metric_readers=[reader],
                         resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "lark")}))


def _get() -> dict | None:
    if not _configured:
        configure(_from_env())
    return _instruments


def record_job(result: Result) -> None:
    """One finished job: its verdict, obligations, cache hits, LLM calls and wall time."""
    instruments = _get()
    if instruments is None:
        return
    verdict = {"lark.verdict": result.verdict}
    stats = result.stats
    instruments["jobs"].add(1, verdict)
    instruments["obligations"].add(int(stats.get("obligations", 0)), verdict)
    instruments["cache_hits"].add(int(stats.get("cache_hits", 0)), verdict)
    instruments["llm_calls"].add(int(stats.get("llm_calls", 0)), verdict)
    instruments["latency"].record(float(stats.get("wall_seconds", 0.0)), verdict)


def watch_queue(depth: Callable[[], int]) -> None:
    """The service's queue depth, read from the job store whenever metrics are collected."""
    instruments = _get()
    if instruments is None:
        return
    from opentelemetry.metrics import Observation

    instruments["meter"].create_observable_gauge(
        "lark.queue.depth", callbacks=[lambda _options: [Observation(depth())]], unit="{job}",
        description="jobs queued and not yet running")
