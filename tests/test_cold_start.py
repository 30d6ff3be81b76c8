"""Cold start (issue 19, item 9): what a first `lark verify` does not pay for.

The reference's capture (a subprocess importing torch) runs while the kernel compiles, and errors still
surface in stage order; `lark verify` starts both before it imports the verifier (`prestart`) and the
pipeline takes that work rather than doing it twice; the CLI's verify and batch paths import no Ray, gRPC,
LLM client, torch or cvc5.
Where the time goes is printed by bench/cold_start.py (timings are never asserted here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from orchestrator import pipeline, prestart
from orchestrator.manifest import IntakeError
from semantics.torch.capture import ReferenceError as CaptureError
from tests.tiny_tasks import write_task

REPO = Path(__file__).resolve().parents[1]
START_UP_FREE = ("ray", "grpc", "openai", "torch", "cvc5")   # none is needed before a task runs


def test_the_capture_runs_while_the_kernel_compiles_and_the_compile_error_comes_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = write_task(tmp_path, "a", "copy")
    started, seen = threading.Event(), []

    def capture(source: Path, timeout_s: float):
        started.set()
        raise CaptureError("the reference does not capture either")

    def compile_kernel(spec, timeout_s: float):
        seen.append(started.wait(60))       # a capture begun only after the compile would never set it
        raise IntakeError("kernel.source", "does not compile")

    monkeypatch.setattr(pipeline, "capture_cached", capture)
    monkeypatch.setattr(pipeline, "compile_kernel", compile_kernel)
    with pytest.raises(IntakeError, match="does not compile"):
        pipeline.prepare(manifest)
    assert seen == [True]


def test_a_failed_capture_is_raised_once_the_kernel_has_compiled(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = write_task(tmp_path, "a", "copy")

    def capture(source: Path, timeout_s: float):
        raise CaptureError(f"{source.name}: no Model")

    monkeypatch.setattr(pipeline, "capture_cached", capture)
    stages: list[str] = []
    with pytest.raises(CaptureError, match="ref.py: no Model"):
        pipeline.prepare(manifest, on_stage=stages.append)
    assert stages == ["compile", "capture the reference"]


def test_work_started_before_the_imports_is_taken_by_the_pipeline_once(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = write_task(tmp_path, "a", "copy")
    real_compile, done = prestart.compile_kernel, []

    def capture(source: Path, timeout_s: float):
        done.append("capture")
        raise CaptureError("the prestarted capture's own error")

    def compile_kernel(spec, timeout_s: float):
        done.append("compile")
        return real_compile(spec, timeout_s)

    def again(*_args):
        raise AssertionError("the pipeline did again what was started for it")

    monkeypatch.setattr(prestart, "capture_cached", capture)
    monkeypatch.setattr(prestart, "compile_kernel", compile_kernel)
    monkeypatch.setattr(pipeline, "capture_cached", again)
    monkeypatch.setattr(pipeline, "compile_kernel", again)
    prestart.begin(manifest, 60.0)
    with pytest.raises(CaptureError, match="the prestarted capture's own error"):
        pipeline.prepare(manifest)
    assert sorted(done) == ["capture", "compile"]
    assert prestart.take(prestart.COMPILE, manifest) is None and prestart.take(prestart.CAPTURE, manifest) is None


def test_a_manifest_that_does_not_load_starts_nothing(tmp_path: Path) -> None:
    manifest = write_task(tmp_path, "broken", "broken")
    prestart.begin(manifest, 60.0)
    assert prestart.take(prestart.COMPILE, manifest) is None


@pytest.mark.parametrize("modules", ["orchestrator.cli", "orchestrator.job", "orchestrator.batch"])
def test_the_command_paths_import_nothing_a_task_does_not_need_yet(modules: str) -> None:
    code = (f"import sys, json, {modules}; "
            f"print(json.dumps(sorted(m for m in {START_UP_FREE!r} if m in sys.modules)))")
    ran = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert json.loads(ran.stdout) == []
