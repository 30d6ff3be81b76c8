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
