"""Issue 19, "nothing silent": exit codes that mean one thing, a `--timeout` that covers the whole task,
findings in the user's terms, intake errors that name the binding, certificates that move.

The tasks are tests/tiny_tasks.py's hand-written PTX (no nvcc, no GPU); each verification costs a capture.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
import z3
from click.testing import CliRunner

from orchestrator import job
from orchestrator.batch import document_paths
from orchestrator.bindings import check_bindings
from orchestrator.checking import run_check
from orchestrator.cli import main
from orchestrator.deadline import DeadlinePassed, within
from orchestrator.explain import document_notes, element, human, multi_index, reason_lines, with_sources
from orchestrator.frontends import FrontendError, compile_kernel
from orchestrator.manifest import IntakeError, KernelSpec
from orchestrator.progress import Counting
from orchestrator.report import batch_exit_status, write_html
from orchestrator.result import Result, error
from semantics.torch.capture import capture_reference
from tests.tiny_tasks import write_task


@pytest.fixture(scope="module", autouse=True)
def shared_cache(tmp_path_factory: pytest.TempPathFactory):
    """One cache folder for the module: each tiny reference is captured once."""
    saved = os.environ.get("LARK_CACHE_DIR")
    os.environ["LARK_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if saved is None:
        del os.environ["LARK_CACHE_DIR"]
    else:
        os.environ["LARK_CACHE_DIR"] = saved


def lark(*args: object) -> tuple[int, str, str]:
    ran = CliRunner().invoke(main, [str(a) for a in args])
    return ran.exit_code, ran.stdout, ran.stderr


def verdict(name: str, value: str) -> Result:
    result = error(name, "", 1.0)
    result.verdict = value
    return result


# ---------------------------------------------------------------------------------------------------------
# 1. Exit codes
# ---------------------------------------------------------------------------------------------------------


def test_batch_exit_status_and_fail_on_unknown() -> None:
    ok, bad, maybe, broken = (verdict(n, v) for n, v in [("a", "verified"), ("b", "refuted"), ("c", "unknown"),
                                                           ("d", "error")])
    assert batch_exit_status([ok, maybe]) == 0
    assert batch_exit_status([ok, maybe], "unknown") == 2
    assert batch_exit_status([ok, bad, maybe], "unknown") == 1
    assert batch_exit_status([bad, broken]) == 3
    assert batch_exit_status([ok], "unknown") == 0


def test_batch_of_an_empty_or_missing_folder_is_exit_3(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    status, _, err = lark("batch", tmp_path / "empty")
    assert status == 3 and "no lark.toml under the folder" in err
    status, _, err = lark("batch", tmp_path / "nowhere")
    assert status == 3 and "does not exist" in err
    listing = tmp_path / "list.txt"
    listing.write_text("# nothing yet\n")
    status, _, err = lark("batch", listing)
    assert status == 3 and "listed in" in err


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_timeout_of_zero_or_less_is_a_usage_error(tmp_path: Path, value: str) -> None:
    manifest = write_task(tmp_path, "a", "copy")
    for command in ("verify", "batch"):
        status, _, err = lark(command, manifest.parent, "--timeout", value)
        assert status == 3 and "--timeout" in err


def test_an_unwritable_certificate_is_refused_before_the_run(tmp_path: Path) -> None:
    manifest = write_task(tmp_path, "a", "copy")
    status, out, err = lark("verify", manifest, "--certificate", tmp_path / "missing" / "c.json")
    assert status == 3 and "does not exist" in err and out == ""
    status, _, err = lark("verify", manifest, "--witness", tmp_path)
    assert status == 3 and "is a folder" in err


def test_a_certificate_that_fails_to_write_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(*_args) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(job.WRITERS, "certificate", ("verified", full_disk))
    result = job.run_verify(write_task(tmp_path, "a", "copy"), 60.0, certificate=tmp_path / "c.json")
    assert result.verdict == "error" and result.exit_status == 3
    assert "verified, but the certificate cannot be written" in result.reason and "No space left" in result.reason
    assert result.properties["equivalence"] == "proved"


def test_a_certificate_of_a_refuted_task_says_it_does_not_apply(tmp_path: Path) -> None:
    certificate = tmp_path / "c.json"
    status, out, err = lark("verify", write_task(tmp_path, "d", "doubled"), "--certificate", certificate)
    assert status == 1 and not certificate.exists()
    assert "no certificate written" in err and "the task is refuted" in err and "--witness" in err


def test_document_notes_name_only_what_does_not_apply() -> None:
    asked = {"certificate": Path("c.json"), "witness": Path("w.json")}
    assert [n.split(":")[0] for n in document_notes(verdict("a", "verified"), asked)] == ["lark"]
    assert "no witness written" in document_notes(verdict("a", "verified"), asked)[0]
    assert len(document_notes(verdict("a", "unknown"), asked)) == 2
    assert document_notes(verdict("a", "refuted"), {"certificate": None, "witness": Path("w.json")}) == []


# ---------------------------------------------------------------------------------------------------------
# 2. The whole task under --timeout
# ---------------------------------------------------------------------------------------------------------


def test_within_stops_python_that_swallows_exceptions() -> None:
    def spin() -> None:
        while True:
            try:
                sum(range(100))
            except Exception:  # noqa: BLE001 - what a careless stage might do
                continue

    with pytest.raises(DeadlinePassed):
        within(time.monotonic() + 0.3, spin)
    assert within(time.monotonic() + 5, lambda: 7) == 7
    with pytest.raises(DeadlinePassed):
        within(time.monotonic() - 1, lambda: 7)


def test_within_stops_z3_work_in_the_main_context() -> None:
    """A stage stuck inside one z3 call (no bytecode runs there, so the async exception alone would wait for it)
    ends at the deadline; z3's main context is usable afterwards. The query factors a 64-bit semiprime, which
    z3 does not finish in minutes."""
    x, y = z3.BitVecs("x y", 64)
    solver = z3.Solver()
    solver.add(x * y == 0xC4CEB9FE1A85EC53, z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 2**32), z3.ULT(y, 2**32))
    start = time.monotonic()
    with pytest.raises(DeadlinePassed):
        within(start + 1.0, solver.check)
    assert time.monotonic() - start < 30
    assert z3.simplify(x + 0).eq(x) and z3.Solver().check(x == 1) == z3.sat


def test_an_interrupt_that_found_no_z3_call_is_cleared() -> None:
    """A stage that runs Python past the deadline: the interrupt meant for z3 finds no call running and would
    stay set on the main context, cancelling every later push and simplify in the process (a server's next
    jobs, the next tests in a pytest worker)."""
    start = time.monotonic()
    with pytest.raises(DeadlinePassed):
        within(start + 0.2, lambda: time.sleep(5))
    solver = z3.Solver()
    solver.push()
    c = z3.Bool("c")
    assert z3.simplify(z3.And(c, True)).eq(c)


def test_a_stage_past_the_deadline_ends_the_job_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def endless(*_args, **_kwargs):
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(job, "verify", endless)
    result = job.run_verify(write_task(tmp_path, "a", "copy"), 2.0)
    assert result.verdict == "unknown", result.reason
    assert "wall-time budget of 2 s exhausted (during" in result.reason


def test_nvcc_gets_only_what_is_left_of_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "fake nvcc 0.1"; else sleep 30; fi\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    with pytest.raises(FrontendError, match="nvcc ran over 0.5 s"):
        compile_kernel(KernelSpec(source=tmp_path / "k.cu", entry="k"), timeout_s=0.5)


def test_a_compile_that_outlives_the_task_timeout_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc stopped because the task's --timeout ran out is the budget's end (unknown), not bad input (error)."""
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "fake nvcc 0.2"; else sleep 30; fi\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    manifest = write_task(tmp_path / "task", "a", "copy")
    (manifest.parent / "kernel.cu").write_text(
        'extern "C" __global__ void copy_kernel(const float* x, float* y, int n) {}\n')
    manifest.write_text(manifest.read_text().replace('"kernel.ptx"', '"kernel.cu"'))
    result = job.run_verify(manifest, 2.0)
    assert result.verdict == "unknown", result.reason
    assert "wall-time budget of 2 s exhausted (during compile)" in result.reason


def test_progress_counts_the_obligations_checked() -> None:
    ticks: list[int] = []
    inner = SimpleNamespace(name="fake", check=lambda ob, timeout_s: "proved")
    counting = Counting(inner, lambda checked, _elapsed: ticks.append(checked), every_s=0.0)
    assert [counting.check(None, 1.0) for _ in range(3)] == ["proved"] * 3
    assert ticks == [1, 2, 3] and counting.checked == 3


def test_progress_lines_reach_stderr(tmp_path: Path) -> None:
    status, _, err = lark("verify", write_task(tmp_path, "a", "copy"))
    assert status == 0
    assert "[lark] capture the reference" in err and "[lark] compile" in err


# ---------------------------------------------------------------------------------------------------------
# 3. Findings in the user's terms
# ---------------------------------------------------------------------------------------------------------


def test_multi_index_of_the_reference_shape() -> None:
    assert multi_index(4368, (256, 256)) == (17, 16)
    assert multi_index(7, (2, 2, 2)) == (1, 1, 1)
    assert element("y", 4368, {"y": (256, 256)}) == "y[17, 16]"
    assert element("y", 70000, {"y": (256, 256)}) == "y[70000]"      # out of bounds: the flat index
    assert element("s", 3, {}) == "s[3]"


def test_reason_lines_name_source_lines_and_stay_short() -> None:
    assert with_sources("could not rule out a race between lines 110 and 117 on s", {110: "k.cu:5", 117: "k.cu:9"}) \
        == "could not rule out a race between lines 110 and 117 [k.cu:5, k.cu:9] on s"
    assert with_sources("unsupported: popc (line 97) [k.cu:12]", {97: "k.cu:12"}).count("k.cu:12") == 1
    shown = reason_lines("; ".join(f"part {i}" for i in range(10)))
    assert len(shown) == 5 and "6 more" in shown[-1]


def test_human_output_shows_the_witness() -> None:
    result = verdict("bias", "refuted")
    result.findings = [{"property": "equivalence", "message": "y[4368] is written as 2 [kernel.cu:8]", "witness": {
        "block": [1, 1, 0], "thread": [0, 1, 0], "buffer": "y", "element_index": 4368, "shape": [256, 256],
        "element": "y[17, 16]", "inputs": {"x[4368]": 0.0, "b[16]": 3.0}, "input_elements": {"x[17, 16]": "x[4368]",
                                                                                            "b[16]": "b[16]"},
        "kernel_value": 2.0, "reference_value": 3.0, "line": 69, "source": "kernel.cu:8"}}]
    text = human(result)
    for shown in ("y[17, 16]", "block [1, 1, 0] thread [0, 1, 0]", "x[17, 16] = 0.0", "kernel     2",
                  "reference  3", "kernel.cu:8 (PTX line 69)"):
        assert shown in text, (shown, text)


def test_a_race_witness_of_triton_names_program_ids_and_source_lines() -> None:
    result = verdict("t", "refuted")
    part = {"block": [3, 0, 0], "program_id": [3, 0, 0], "thread": [1, 0, 0], "line": 40, "source": "kernel.py:9"}
    result.findings = [{"property": "race_freedom", "message": "data race", "witness": {
        "buffer": "_ZZ4kernE4tile", "element_index": 5, "first": {**part, "access": "store"},
        "second": {**part, "thread": [2, 0, 0], "access": "load"}}}]
    text = human(result)
    assert "tile[5]" in text and "program_id [3, 0, 0] thread [1, 0, 0] stores it at kernel.py:9" in text


def test_a_refuted_task_reports_its_element_shaped(tmp_path: Path) -> None:
    result = job.run_verify(write_task(tmp_path, "d", "doubled"), 120.0)
    assert result.verdict == "refuted"
    witness = result.findings[0]["witness"]
    row, col = divmod(witness["element_index"], 100)
    assert witness["shape"] == [100, 100] and witness["element"] == f"y[{row}, {col}]"


# ---------------------------------------------------------------------------------------------------------
# 4. Intake
# ---------------------------------------------------------------------------------------------------------


def test_a_tensor_of_another_dtype_than_its_triton_pointer_is_an_intake_error() -> None:
    task = SimpleNamespace(launch=SimpleNamespace(args=["x", "y", 8]), kernel=SimpleNamespace(entry="k"))
    params = [("k_param_0", ".u64", True), ("k_param_1", ".u64", True), ("k_param_2", ".u32", False)]
    kinds = {"x": "tensor:float16", "y": "tensor:float32"}
    with pytest.raises(IntakeError, match=r'launch.args\[0\].*"x" \(a float16 tensor\).*"\*fp32"'):
        check_bindings(task, params, kinds, ("*fp32", "*fp32", "i32"))
    check_bindings(task, params, kinds, ("*fp16", "*fp32", "i32"))
    check_bindings(task, params, kinds)            # CUDA: untyped PTX pointers, nothing declared


def test_a_folder_without_lark_toml_says_so(tmp_path: Path) -> None:
    status, out, _ = lark("verify", tmp_path, "--json")
    shown = json.loads(out)
    assert status == 3 and shown["verdict"] == "error" and "has no lark.toml" in shown["reason"]


def test_a_reference_may_import_a_module_beside_it(tmp_path: Path) -> None:
    (tmp_path / "sizes.py").write_text("ROWS, COLS = 6, 7\n")
    (tmp_path / "ref.py").write_text(
        "import torch\nimport torch.nn as nn\nfrom sizes import ROWS, COLS\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)\n\n\ndef get_inputs():\n"
        "    return [torch.randn(ROWS, COLS)]\n\n\ndef get_init_inputs():\n    return []\n")
    graph = capture_reference(tmp_path / "ref.py", 120.0)
    assert tuple(graph.outputs[0].shape) == (6, 7)


# ---------------------------------------------------------------------------------------------------------
# 5. Certificates move
# ---------------------------------------------------------------------------------------------------------


def test_a_certificate_copied_with_its_task_still_checks(tmp_path: Path) -> None:
    manifest = write_task(tmp_path / "lib", "a", "copy", rows=30)
    (tmp_path / "out").mkdir()
    result = job.run_verify(manifest, 120.0, certificate=tmp_path / "out" / "cert.json")
    assert result.verdict == "verified" and result.certificate
    assert json.loads((tmp_path / "out" / "cert.json").read_text())["manifest"] == "../lib/a/lark.toml"

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(manifest.parent, elsewhere / "a")
    shutil.copy(tmp_path / "out" / "cert.json", elsewhere / "cert.json")
    shutil.rmtree(tmp_path / "lib")
    status, text = run_check(elsewhere / "cert.json", "z3")
    assert status == 0, text

    shutil.rmtree(elsewhere / "a")
    status, text = run_check(elsewhere / "cert.json", "z3")
    assert status == 3 and "cannot check" in text and "not found" in text


# ---------------------------------------------------------------------------------------------------------
# 6. The batch HTML report
# ---------------------------------------------------------------------------------------------------------


class _Table(HTMLParser):
    """The report's rows (each a list of cell texts), its links (href, text) and its meta line."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.links: list[tuple[str, str]] = []
        self.meta = ""
        self._cell: list[str] | None = None
        self._href: str | None = None
        self._in_meta = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []
        elif tag == "a":
            self._href = attrs.get("href")
        elif tag == "p" and attrs.get("class") == "meta":
            self._in_meta = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join(self._cell))
            self._cell = None
        elif tag == "p":
            self._in_meta = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data.strip())
        if self._href is not None:
            self.links.append((self._href, data))
            self._href = None
        if self._in_meta:
            self.meta += data


def test_the_report_sorts_by_severity_and_shows_what_a_lead_needs(tmp_path: Path) -> None:
    manifests = {name: write_task(tmp_path / folder, "relu", "copy") for name, folder in
                 [("refuted", "lib"), ("verified", "other"), ("unknown", "third"), ("error", "fourth")]}
    rows = []
    for value, manifest in manifests.items():
        result = verdict("relu", value)                # four tasks of the same name, in four folders
        result.stats["wall_seconds"] = 1.5
        if value == "refuted":
            result.findings = [{"property": "equivalence", "message": "y[4368] differs", "witness": {
                "block": [1, 0, 0], "thread": [2, 0, 0], "buffer": "y", "element_index": 4368, "shape": [256, 256],
                "element": "y[17, 16]", "kernel_value": 2.0, "reference_value": 3.0, "line": 9, "source": "k.cu:4"}}]
        if value == "unknown":
            result.reason = "unsupported: instruction `popc.b32` (line 47) [kernel.cu:7]"
        rows.append((manifest, result))
    documents = document_paths([m for m, _ in rows], tmp_path / "certs")
    (tmp_path / "certs").mkdir()
    documents[manifests["verified"]][0].write_text("{}")
    documents[manifests["refuted"]][1].write_text("{}")
    page = tmp_path / "report.html"
    write_html(page, rows, 12.0, documents=documents)

    table = _Table()
    table.feed(page.read_text())
    tasks = [row for row in table.rows if row]
    assert [row[1] for row in tasks] == ["refuted", "error", "unknown", "verified"]
    assert len({row[0] for row in tasks}) == 4                     # same name, told apart by the folder
    assert all("relu" in row[0] and "(same name)" in row[0] for row in tasks)
    assert "y[17, 16]" in tasks[0][2] and "k.cu:4" in tasks[0][2] and "kernel.cu:7" in tasks[2][2]
    assert all(row[4] == "1.50" for row in tasks)
    assert "LARK " in table.meta and "12.0 s" in table.meta and "6.0 s" in table.meta
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", table.meta)
    hrefs = dict((text, href) for href, text in table.links if text in ("certificate", "witness"))
    assert hrefs == {"certificate": "certs/other__relu.cert.json", "witness": "certs/lib__relu.witness.json"}
    sources = [href for href, text in table.links if text == "source"]
    assert sorted(sources) == sorted(f"{folder}/relu/kernel.ptx" for folder in ("lib", "other", "third", "fourth"))
