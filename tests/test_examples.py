"""The project's own tasks (examples/*): `lark verify --json` gives each one the verdict its EXPECT names.

EXPECT holds one line:
  `verified <tier>`                 every property proved, at least one obligation checked
  `refuted <prop>[|<prop>...]`      at least one of the named properties violated, each violated one with a
                                    concrete witness (block and thread ids, or the element never written)
  `unknown <word>`                  the JSON `reason` names <word>
Each case runs in its own subprocess, so the tests share no state and run under `pytest -n 2`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
MANIFESTS = sorted(EXAMPLES.glob("*/lark.toml"))

EXIT_STATUS = {"verified": 0, "refuted": 1, "unknown": 2}
PROPERTY = {
    "equivalence": "equivalence",
    "race": "race_freedom",
    "barrier": "barrier_uniformity",
    "memory": "memory_safety",
    "termination": "termination",
}
PROPERTIES = set(PROPERTY.values())
SUBPROCESS_TIMEOUT_S = 900


def read_expect(case: Path) -> tuple[str, str]:
    lines = [line.strip() for line in (case / "EXPECT").read_text().splitlines() if line.strip()]
    assert len(lines) == 1, f"{case.name}/EXPECT must hold exactly one line, it has {lines}"
    verdict, _, detail = lines[0].partition(" ")
    assert verdict in EXIT_STATUS, f"{case.name}/EXPECT: unknown verdict {verdict!r}"
    assert detail, f"{case.name}/EXPECT: '{verdict}' needs a second word"
    return verdict, detail


def run_lark(manifest: Path) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-c", "from orchestrator.cli import main; main()", "verify", str(manifest), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    out = proc.stdout.strip()
    try:
        result = json.loads(out)
    except json.JSONDecodeError:
        pytest.fail(f"stdout is not one JSON object (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    assert isinstance(result, dict)
    return proc.returncode, result, proc.stderr


def _located(access: object) -> bool:
    return isinstance(access, dict) and "block" in access and "thread" in access


def witness_problem(finding: dict) -> str | None:
    """Why a finding's witness is not concrete enough, or None when it is."""
    w = finding.get("witness")
    if not isinstance(w, dict) or not w:
        return "empty witness"
    if "never written" in finding.get("message", "") or ("written_by" in w and w["written_by"] is None):
        return None if isinstance(w.get("element_index"), int) else "no element_index for an unwritten element"
    if _located(w):
        return None
    if _located(w.get("first")) and _located(w.get("second")):  # a race: the two conflicting accesses
        return None
    return "no block and thread ids"


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.parent.name for m in MANIFESTS])
def test_example(manifest: Path) -> None:
    case = manifest.parent
    expected, detail = read_expect(case)
    status, result, stderr = run_lark(manifest)
    shown = json.dumps(result, indent=2)

    assert result["verdict"] == expected, f"expected {expected} ({detail}), got:\n{shown}\n{stderr}"
    assert status == EXIT_STATUS[expected], f"exit status {status} for a {expected} verdict:\n{shown}"
    assert set(result["properties"]) == PROPERTIES, shown

    if expected == "verified":
        assert all(state == "proved" for state in result["properties"].values()), shown
        assert result["findings"] == [], shown
        assert result["stats"]["obligations"] > 0, shown

    elif expected == "refuted":
        wanted = []
        for word in detail.split("|"):
            assert word in PROPERTY, f"{case.name}/EXPECT: unknown property {word!r}"
            wanted.append(PROPERTY[word])
        violated = [p for p in wanted if result["properties"][p] == "violated"]
        assert violated, f"none of {wanted} is violated:\n{shown}"
        for prop in violated:
            findings = [f for f in result["findings"] if f["property"] == prop]
            assert findings, f"{prop} is violated but has no finding:\n{shown}"
            problems = [witness_problem(f) for f in findings]
            assert None in problems, f"no concrete witness for {prop} ({problems}):\n{shown}"

    else:  # unknown
        assert result["reason"], shown
        assert detail.lower() in result["reason"].lower(), f"reason does not name {detail!r}:\n{shown}"


def test_every_example_has_its_files() -> None:
    assert len(MANIFESTS) >= 14
    for manifest in MANIFESTS:
        case = manifest.parent
        assert (case / "EXPECT").is_file(), case.name
        assert (case / "ref.py").is_file(), case.name
        assert any(case.glob("kernel.*")), case.name
        read_expect(case)
