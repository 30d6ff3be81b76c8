"""`lark batch`: discovery, resumable state, reports, exit status. (That `lark batch examples/ --workers 2`
on a real local Ray instance gives each task the verdict `lark verify` gives it alone is tested beside the
one-by-one runs, in tests/test_examples.py.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from orchestrator.batch import State, discover, task_key
from orchestrator.report import batch_exit_status, write_html, write_junit
from orchestrator.result import Result, error
from tests.tiny_tasks import write_task

REPO = Path(__file__).resolve().parents[1]


def result(name: str, verdict: str, reason: str | None = None) -> Result:
    r = error(name, reason or "", 1.0)
    r.verdict, r.reason = verdict, reason
    if verdict == "refuted":
        r.findings = [{"property": "equivalence", "message": "y[3] differs", "witness": {}}]
    return r


def test_discover_a_directory_or_a_list_file(tmp_path):
    a = write_task(tmp_path / "lib", "a", "copy")
    b = write_task(tmp_path / "lib" / "nested", "b", "broken")
    assert discover(tmp_path / "lib") == sorted([a, b])
    listing = tmp_path / "tasks.txt"
    listing.write_text("# the library\nlib/nested/b/lark.toml\n\nlib/a/lark.toml  # copy\n")
    assert discover(listing) == [b, a]


def test_task_key_follows_the_files_a_manifest_names(tmp_path):
    manifest = write_task(tmp_path, "a", "copy")
    options = {"timeout_s": 600.0, "solver_s": None}
    key = task_key(manifest, options)
    assert task_key(manifest, options) == key
    assert task_key(manifest, {**options, "timeout_s": 60.0}) != key
    (manifest.parent / "kernel.ptx").write_text((manifest.parent / "kernel.ptx").read_text() + "\n// edited\n")
    assert task_key(manifest, options) != key


def test_state_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "state.jsonl"
    state = State(path)
    state.record("k1", tmp_path / "a" / "lark.toml", result("a", "verified"))
    with path.open("a") as f:
        f.write('{"key": "k2", "result": {"na')
    again = State(path)
    assert list(again.done) == ["k1"] and again.done["k1"].verdict == "verified"


def test_reports_and_batch_exit_status(tmp_path):
    rows = [(tmp_path / n / "lark.toml", result(n, v, r)) for n, v, r in
            [("ok", "verified", None), ("bad", "refuted", None), ("maybe", "unknown", "timeout"),
             ("broken", "error", "kernel: required key is missing")]]
    write_junit(tmp_path / "j.xml", rows)
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    assert set(cases) == {"ok", "bad", "maybe", "broken"}
    verdict = {n: c.find("properties/property[@name='verdict']").get("value") for n, c in cases.items()}
    assert verdict == {"ok": "verified", "bad": "refuted", "maybe": "unknown", "broken": "error"}
    assert cases["ok"].find("failure") is None and cases["ok"].find("skipped") is None
    assert cases["bad"].find("failure").get("type") == "refuted"
    assert cases["broken"].find("failure").get("type") == "error"
    assert "timeout" in cases["maybe"].find("skipped").get("message")

    write_html(tmp_path / "r.html", rows)
    page = (tmp_path / "r.html").read_text()
    assert all(name in page for name in cases) and "y[3] differs" in page

    verdicts = [r for _, r in rows]
    assert batch_exit_status(verdicts) == 3
    assert batch_exit_status(verdicts[:3]) == 1
    assert batch_exit_status([verdicts[0], verdicts[2]]) == 0
