"""`lark batch`: discovery, resumable state, reports, exit status; and on a real local Ray instance, the
verdicts of `lark batch examples/ --workers 2` are exactly those of verifying each task alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

from orchestrator.batch import State, discover, task_key
from orchestrator.report import exit_status, write_html, write_junit
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
    key = task_key(manifest, 600.0, None)
    assert task_key(manifest, 600.0, None) == key
    assert task_key(manifest, 60.0, None) != key
    (manifest.parent / "kernel.ptx").write_text((manifest.parent / "kernel.ptx").read_text() + "\n// edited\n")
    assert task_key(manifest, 600.0, None) != key


def test_state_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "state.jsonl"
    state = State(path)
    state.record("k1", tmp_path / "a" / "lark.toml", result("a", "verified"))
    with path.open("a") as f:
        f.write('{"key": "k2", "result": {"na')
    again = State(path)
    assert list(again.done) == ["k1"] and again.done["k1"].verdict == "verified"


def test_reports_and_exit_status(tmp_path):
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
    assert exit_status(verdicts) == 3
    assert exit_status(verdicts[:3]) == 1
    assert exit_status([verdicts[0], verdicts[2]]) == 0


def lark_batch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "batch", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=1800)


def expected_verdict(manifest: Path) -> str:
    return (manifest.parent / "EXPECT").read_text().split()[0]


def test_batch_of_the_examples_on_local_ray_gives_the_one_by_one_verdicts(tmp_path, monkeypatch):
    """Each example's EXPECT names the verdict `lark verify` gives it alone (tests/test_examples.py checks
    exactly that, one process per task), so matching EXPECT is matching one-by-one `lark verify`. The
    batch may reuse compiled PTX and captured references (content-addressed artifacts) from the default
    cache, never its lemmas: every obligation is solved again, by the fleet's workers."""
    cache = tmp_path / "cache"
    default = Path.home() / ".cache" / "lark"
    for artifact in ("ptx", "ref"):
        if (default / artifact).is_dir():
            shutil.copytree(default / artifact, cache / artifact)
    monkeypatch.setenv("LARK_CACHE_DIR", str(cache))
    junit, report = tmp_path / "out" / "j.xml", tmp_path / "out" / "r.html"
    report.parent.mkdir()
    proc = lark_batch(str(REPO / "examples"), "--workers", "2", "--junit", str(junit), "--report", str(report),
                      cwd=tmp_path)
    assert proc.returncode in (0, 1, 3) and junit.is_file(), proc.stderr[-5000:]
    batch = {c.get("name"): json.loads(c.find("system-out").text)
             for c in ET.parse(junit).getroot().iter("testcase")}
    manifests = discover(REPO / "examples")
    assert len(batch) == len(manifests)
    for manifest in manifests:
        name = tomllib.loads(manifest.read_text())["name"]
        assert batch[name]["verdict"] == expected_verdict(manifest), (name, batch[name])

    rerun = lark_batch(str(REPO / "examples"), "--junit", str(junit), "--report", str(report), cwd=tmp_path)
    assert rerun.returncode == proc.returncode
    assert rerun.stdout.count("(resumed)") == len(manifests), rerun.stdout
