"""`lark batch`: discovery, resumable state, reports, exit status. (That `lark batch examples/ --workers 2`
on a real local Ray instance gives each task the verdict `lark verify` gives it alone is tested beside the
one-by-one runs, in tests/test_examples.py.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from orchestrator import batch
from orchestrator.batch import State, answered, answered_line, discover, run_batch, task_key, task_keys
from orchestrator.report import batch_exit_status, write_html, write_junit
from orchestrator.result import Result, error
from orchestrator.result_store import ResultStore, reproducible
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


# --- the result store: what a later batch with another state file is answered from ------------------------


def test_only_results_the_same_inputs_give_again_are_stored(tmp_path):
    store = ResultStore(tmp_path / "results")
    kept = [result("a", "verified"), result("b", "refuted"),
            result("c", "unknown", "could not prove the value stored to y (z3: incomplete (theory arithmetic))")]
    dropped = [result("d", "unknown", "wall-time budget of 20 s exhausted (during verify)"),
               result("e", "unknown", "solver-time budget of 5 s exhausted: could not prove y"),
               result("f", "unknown", "could not prove the value stored to y (z3: timeout)"),
               result("g", "unknown", "cancelled"), result("h", "unknown", "internal error: KeyError: 'x'"),
               result("i", "error", "kernel: required key is missing")]
    assert [reproducible(r) for r in kept + dropped] == [True] * 3 + [False] * 6
    for r in kept + dropped:
        store.put(f"key-{r.name}", r)
    assert [store.get(f"key-{r.name}") for r in dropped] == [None] * len(dropped)
    assert [store.get(f"key-{r.name}").to_json() for r in kept] == [r.to_json() for r in kept]
    assert store.get("key-never-stored") is None


def test_a_stored_result_puts_back_its_document_or_is_a_miss(tmp_path):
    store = ResultStore(tmp_path / "results")
    first = {"certificate": tmp_path / "first" / "a.cert.json", "witness": tmp_path / "first" / "a.witness.json"}
    first["certificate"].parent.mkdir()
    first["certificate"].write_text('{"certificate": "of a"}')
    store.put("key-a", result("a", "verified"), first)
    store.put("key-b", result("b", "verified"), {"certificate": tmp_path / "never-written.cert.json"})
    again = {"certificate": tmp_path / "again" / "a.cert.json", "witness": tmp_path / "again" / "a.witness.json"}
    assert store.get("key-a", again).verdict == "verified"
    assert again["certificate"].read_text() == '{"certificate": "of a"}' and not again["witness"].exists()
    assert store.get("key-b", {"certificate": tmp_path / "b.cert.json"}) is None   # its run wrote none
    assert store.get("key-b") is not None                                           # none asked for


def test_a_batch_is_answered_by_its_state_file_then_by_the_store(tmp_path):
    manifests = [write_task(tmp_path / "lib", name, "copy") for name in ("a", "b", "c")]
    keys = task_keys(manifests, {"timeout_s": 600.0, "solver_s": None})
    store, state = ResultStore(tmp_path / "results"), State(tmp_path / "state.jsonl")
    state.record(keys[manifests[0]], manifests[0], result("a", "verified"))
    store.put(keys[manifests[1]], result("b", "refuted"))
    found = answered(manifests, keys, state, store, {})
    assert [(m.parent.name, o.resumed, o.stored) for m, o in found.items()] == [("a", True, False),
                                                                              ("b", True, True)]
    assert keys[manifests[1]] in State(tmp_path / "state.jsonl").done   # the store's answer is journaled
    assert answered_line(list(found.values()), 3) == ("lark batch: 2 of 3 tasks answered from stored results "
                                                      "(1 from the state file, 1 from the result store); "
                                                      "starting Ray for 1")


def test_the_key_covers_where_the_documents_are_written(tmp_path):
    manifest = write_task(tmp_path / "lib", "a", "copy")
    options = {"timeout_s": 600.0, "solver_s": None}
    plain = task_keys([manifest], options)[manifest]
    here = task_keys([manifest], options, {manifest: (tmp_path / "c1" / "a.cert.json", tmp_path / "c1" / "a.w")})
    there = task_keys([manifest], options, {manifest: (tmp_path / "c2" / "a.cert.json", tmp_path / "c2" / "a.w")})
    assert len({plain, here[manifest], there[manifest]}) == 3


def test_rerun_runs_every_task_the_state_file_and_the_store_would_answer(tmp_path, monkeypatch):
    manifests = [write_task(tmp_path / "lib", name, "copy") for name in ("a", "b")]
    ran: list[list[str]] = []

    def fleet(todo, workers, address, timeout_s, solver_s, on_done, documents, llm=None) -> None:
        ran.append([m.parent.name for m in todo])
        for m in todo:
            on_done(str(m), result(m.parent.name, "verified"), None)

    monkeypatch.setattr(batch, "_run_on_ray", fleet)
    store, state = ResultStore(tmp_path / "results"), State(tmp_path / "state.jsonl")
    run_batch(manifests, state, show_progress=False, store=store)
    again = run_batch(manifests, State(tmp_path / "other.jsonl"), show_progress=False, store=store)
    forced = run_batch(manifests, state, show_progress=False, store=store, rerun=True)
    assert ran == [["a", "b"], ["a", "b"]]
    assert [o.stored for o in again] == [True, True] and [o.resumed for o in forced] == [False, False]
