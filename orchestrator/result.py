"""The JSON result and exit status of DESIGN §2.2 (pinned: tools outside this repo parse it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from semantics.properties.common import NOT_APPLICABLE, NOT_CHECKED, PROPERTIES

if TYPE_CHECKING:   # a result is read and printed (`lark batch`, reports) without importing the verdict
    from semantics.verdict import Report

EXIT_STATUS = {"verified": 0, "refuted": 1, "unknown": 2, "error": 3}
# How people read a not_applicable state, per property (the JSON keeps the bare state).
NOT_APPLICABLE_SHOWN = {
    "equivalence": "not applicable: a safety-only task (no [reference]), equivalence was not asked for",
    "memory_safety": "not applicable: every access is to an unbounded buffer",
}


def shown_state(prop: str, state: str) -> str:
    """A property's state for the human output and the HTML report."""
    return NOT_APPLICABLE_SHOWN.get(prop, state) if state == NOT_APPLICABLE else state


@dataclass
class Result:
    name: str
    verdict: str
    properties: dict[str, str]
    findings: list[dict] = field(default_factory=list)
    reason: str | None = None
    certificate: str | None = None
    stats: dict = field(default_factory=dict)
    axioms: list[str] = field(default_factory=list)

    @property
    def safety_only(self) -> bool:
        return self.properties.get("equivalence") == NOT_APPLICABLE

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    def to_json(self) -> dict:
        return {"name": self.name, "verdict": self.verdict, "properties": self.properties,
                "findings": self.findings, "reason": self.reason, "certificate": self.certificate,
                "stats": self.stats, "axioms": self.axioms}


def from_report(name: str, report: Report, wall_seconds: float) -> Result:
    findings = [{"property": f.prop, "message": f.message, "witness": f.witness} for f in report.findings]
    outcomes = [o for _, o in report.obligations]
    stats = {"wall_seconds": round(wall_seconds, 3), "obligations": len(report.obligations),
             "cache_hits": sum(o.cached is True for o in outcomes),
             "cache_misses": sum(o.cached is False for o in outcomes), "llm_calls": 0,
             "solver_seconds": round(sum(o.seconds for _, o in report.obligations), 3)}
    return Result(name, report.verdict, report.properties, findings, report.reason, None, stats, report.axioms)


def error(name: str, message: str, wall_seconds: float) -> Result:
    return Result(name, "error", {p: NOT_CHECKED for p in PROPERTIES}, [], message, None,
                  {"wall_seconds": round(wall_seconds, 3), "obligations": 0, "cache_hits": 0, "llm_calls": 0})
