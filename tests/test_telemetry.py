"""OpenTelemetry spans from `lark verify`: job -> stage -> (search goal -> candidate ->) obligation, recorded with
the SDK's in-memory exporter; and no tracing at all unless configured or OTEL_EXPORTER_OTLP_ENDPOINT is set."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator import telemetry
from orchestrator.job import run_verify

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(provider)
    try:
        yield exporter
    finally:
        telemetry.configure(None)
        provider.shutdown()


def test_a_verify_run_produces_the_span_tree(spans):
    result = run_verify(EXAMPLES / "loop_rowsum_per_thread" / "lark.toml", 600.0)
    assert result.verdict == "verified"
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}

    def parent(s):
        return by_id.get(s.parent.span_id) if s.parent is not None else None

    [job] = [s for s in finished if s.name == "lark.job"]
    assert job.parent is None and job.attributes["lark.verdict"] == "verified"
    assert job.attributes["lark.property.race_freedom"] == "proved"
    stages = [s for s in finished if s.name == "lark.stage"]
    assert all(parent(s) is job for s in stages)
    assert {"symbolic execution", "termination", "memory safety", "race freedom", "equivalence"} <= \
        {s.attributes["lark.stage"] for s in stages}
    assert {s.attributes.get("lark.property") for s in stages} >= {"memory_safety", "race_freedom", "termination"}
    obligations = [s for s in finished if s.name == "lark.obligation"]
    assert len(obligations) >= result.stats["obligations"]
    assert all(parent(s) is not None and parent(s).name in ("lark.stage", "lark.search.candidate")
               for s in obligations)
    assert all(s.attributes["lark.obligation.status"] in ("proved", "refuted", "unknown") for s in obligations)
    goals = [s for s in finished if s.name == "lark.search.goal"]
    assert len(goals) == result.stats["search"]["goals"] >= 1
    assert all(parent(g).name == "lark.stage" for g in goals)
    candidates = [s for s in finished if s.name == "lark.search.candidate"]
    assert len(candidates) == result.stats["search"]["candidates_tried"]
    assert all(parent(c).name == "lark.search.goal" for c in candidates)
    assert any(parent(o) in candidates for o in obligations)
    assert {c.attributes["lark.candidate.state"] for c in candidates} >= {"proved"}


def test_without_configuration_nothing_is_traced(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setattr(telemetry, "_from_env_done", False)
    monkeypatch.setattr(telemetry, "_provider", None)
    with telemetry.span("lark.job") as handle:
        assert handle.span is None
    assert telemetry.start("x").span is None and telemetry._provider is None


def test_an_otlp_endpoint_turns_on_export(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(telemetry, "_from_env_done", False)
    monkeypatch.setattr(telemetry, "_provider", None)
    try:
        assert telemetry._tracer() is not None
        assert telemetry._provider.resource.attributes["service.name"] == "lark"
    finally:
        provider = telemetry._provider
        telemetry.configure(None)
        provider.shutdown()     # nothing was recorded: nothing is sent


# ---- metrics ------------------------------------------------------------------------------------------------

@pytest.fixture
def reader():
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from orchestrator import metrics

    found = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[found])
    metrics.configure(provider)
    try:
        yield found
    finally:
        metrics.configure(None)
        provider.shutdown()


def _points(reader) -> dict[str, list]:
    data = reader.get_metrics_data()
    return {m.name: list(m.data.data_points) for rm in data.resource_metrics for sm in rm.scope_metrics
            for m in sm.metrics}


def test_jobs_report_their_verdict_obligations_and_latency(reader):
    verified = run_verify(EXAMPLES / "relu_64x64" / "lark.toml", 600.0)
    refuted = run_verify(EXAMPLES / "grid_too_small" / "lark.toml", 600.0)
    assert (verified.verdict, refuted.verdict) == ("verified", "refuted")
    points = _points(reader)
    jobs = {p.attributes["lark.verdict"]: p.value for p in points["lark.jobs"]}
    assert jobs == {"verified": 1, "refuted": 1}
    obligations = {p.attributes["lark.verdict"]: p.value for p in points["lark.obligations"]}
    assert obligations["verified"] == verified.stats["obligations"] > 0
    (latency,) = [p for p in points["lark.job.duration"] if p.attributes["lark.verdict"] == "verified"]
    assert latency.count == 1 and latency.sum == pytest.approx(verified.stats["wall_seconds"])


def test_the_service_reports_its_queue_depth(reader, tmp_path):
    from orchestrator import metrics
    from orchestrator.job import Sources
    from orchestrator.jobs_db import JobStore, Request

    store = JobStore(tmp_path / "jobs.db")
    metrics.watch_queue(store.queued)
    depths = []
    for n in range(3):      # two jobs queued, then one taken by a worker
        if n < 2:
            store.submit(Request(Sources(f"t{n}", f'name = "t{n}"', {}), 60.0 + n, None))
        else:
            store.claim()
        (depth,) = _points(reader)["lark.queue.depth"]
        depths.append(depth.value)
    assert depths == [1, 2, 1]
    store.close()


def test_without_configuration_no_metric_is_recorded(monkeypatch):
    from orchestrator import metrics

    monkeypatch.delenv("LARK_METRICS", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setattr(metrics, "_configured", False)
    assert metrics._get() is None
    monkeypatch.setenv("LARK_METRICS", "console")
    monkeypatch.setattr(metrics, "_configured", False)
    assert set(metrics._get()) >= {"jobs", "obligations", "cache_hits", "llm_calls", "latency"}
    metrics.configure(None)
