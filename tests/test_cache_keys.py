"""Every cache key and the batch resume key cover every input (issue 13, item 1).

The scenario that failed: a kernel including a header verified, the header was edited to compute a wrong
value, and `lark verify` answered `verified` again from the compiled-kernel cache. Each test here edits one
input (a header, a module the reference imports, a Triton helper module, LARK's or the semantics version,
the compiler flags) and sees the task compiled, captured or verified again; and an unchanged input is
served from the cache. Tasks are tiny (one block, 256 elements) so each compile costs about a second.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lean_pool.cache import CachingChecker, DiskLemmaStore
from orchestrator import batch, capture_cache, frontends, version
from orchestrator.batch import State, run_batch, task_key
from orchestrator.fingerprint import digest, python_tree
from orchestrator.frontends import compile_kernel, kernel_inputs
from orchestrator.job import run_verify
from orchestrator.manifest import KernelSpec
from orchestrator.result import Result
from orchestrator.result_store import ResultStore
from semantics import version as semantics_versions
from tests.test_cache import Counting, fresh_obligation

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not on PATH")
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")

RELU = "v > 0.0f ? v : 0.0f"
WRONG = "v > 0.0f ? v : 1.0f"     # differs from relu on every negative input

HEADER = "__device__ inline float op(float v) {{ return {body}; }}\n"

KERNEL_CU = """\
#include "op.cuh"
extern "C" __global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef SHIFTED
    if (i < n) y[i] = op(x[i]) + 1.0f;
#else
    if (i < n) y[i] = op(x[i]);
#endif
}
"""

REFERENCE = """\
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))   # its folder's modules, as a KernelBench file may do
from helper import act  # noqa: E402


class Model(nn.Module):
    def forward(self, x):
        return act(x)


def get_inputs():
    return [torch.rand(256)]


def get_init_inputs():
    return []
"""

HELPER = "import torch\n\n\ndef act(x):\n    return {expr}\n"

MANIFEST = """\
name = "{name}"

[kernel]
source = "kernel.cu"
entry = "relu_kernel"

[launch]
grid = [1, 1, 1]
block = [256, 1, 1]
args = ["x", "y", 256]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""

TRITON_KERNEL = """\
import triton
import triton.language as tl
from scale import op


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, op(tl.load(x_ptr + offs, mask=mask)), mask=mask)
"""

TRITON_HELPER = "import triton\n\n\n@triton.jit\ndef op(x):\n    return x * {factor}\n"
TRITON_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One LARK_CACHE_DIR for the module: kernels are keyed by their absolute path, so each test's own
    folder compiles afresh, while the identical reference folders share one capture (seconds each)."""
    return tmp_path_factory.mktemp("lark-cache")


@pytest.fixture(autouse=True)
def cache_dir(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LARK_CACHE_DIR", str(shared_cache))
    return shared_cache


def write_task(folder: Path, header: str = RELU, act: str = "torch.relu(x)") -> Path:
    folder.mkdir(parents=True)
    (folder / "op.cuh").write_text(HEADER.format(body=header))
    (folder / "kernel.cu").write_text(KERNEL_CU)
    (folder / "ref.py").write_text(REFERENCE)
    (folder / "helper.py").write_text(HELPER.format(expr=act))
    (folder / "lark.toml").write_text(MANIFEST.format(name=folder.name))
    return folder / "lark.toml"


def spec_of(manifest: Path) -> KernelSpec:
    return KernelSpec(source=manifest.parent / "kernel.cu", entry="relu_kernel")


def counting_compiles(monkeypatch: pytest.MonkeyPatch, language: str = "cuda") -> list[str]:
    """Record every real compile (a cache miss) of `language`."""
    calls: list[str] = []
    compiler = frontends.COMPILERS[language]

    def counting(spec: KernelSpec, timeout_s: float):
        calls.append(spec.entry)
        return compiler(spec, timeout_s)

    monkeypatch.setitem(frontends.COMPILERS, language, counting)
    return calls


# --- the compiled-kernel cache ----------------------------------------------------------------------------


@needs_nvcc
def test_an_edited_header_is_compiled_again_and_refuted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's scenario, end to end: verified, header made wrong, refuted (not `verified` from cache)."""
    calls = counting_compiles(monkeypatch)
    manifest = write_task(tmp_path / "relu")
    assert run_verify(manifest, 600).verdict == "verified"
    (manifest.parent / "op.cuh").write_text(HEADER.format(body=WRONG))
    second = run_verify(manifest, 600)
    assert second.verdict == "refuted" and second.properties["equivalence"] == "violated"
    assert len(calls) == 2


@needs_nvcc
def test_a_hit_runs_no_compiler_and_any_changed_file_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_compiles(monkeypatch)
    spec = spec_of(write_task(tmp_path / "relu"))
    first = compile_kernel(spec)
    assert compile_kernel(spec) == first and len(calls) == 1          # a hit: no nvcc
    header = spec.source.parent / "op.cuh"
    header.write_text(HEADER.format(body=WRONG))
    assert compile_kernel(spec) != first and len(calls) == 2          # header edited: compiled again
    header.unlink()
    with pytest.raises(frontends.FrontendError):                      # header gone: nvcc says so
        compile_kernel(spec)
    assert len(calls) == 3


@needs_nvcc
def test_compiler_flags_are_in_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_compiles(monkeypatch)
    spec = spec_of(write_task(tmp_path / "relu"))
    plain = compile_kernel(spec)
    monkeypatch.setattr(frontends, "NVCC_FLAGS", (*frontends.NVCC_FLAGS, "-DSHIFTED"))
    shifted = compile_kernel(spec)
    assert len(calls) == 2 and shifted.ptx != plain.ptx and "0f3F800000" in shifted.ptx   # + 1.0f


@needs_nvcc
def test_lark_version_is_in_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_compiles(monkeypatch)
    spec = spec_of(write_task(tmp_path / "relu"))
    compile_kernel(spec)
    monkeypatch.setattr(frontends, "package_version", lambda: "99.0")
    compile_kernel(spec)
    assert len(calls) == 2


@needs_nvcc
def test_an_edit_during_the_compile_leaves_no_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc may have read the old bytes: the entry would pair them with the new hash."""
    spec = spec_of(write_task(tmp_path / "relu"))
    compiler = frontends.COMPILERS["cuda"]

    def edited_meanwhile(spec: KernelSpec, timeout_s: float):
        answer = compiler(spec, timeout_s)
        (spec.source.parent / "op.cuh").write_text(HEADER.format(body=WRONG))
        return answer

    monkeypatch.setitem(frontends.COMPILERS, "cuda", edited_meanwhile)
    compile_kernel(spec)
    calls = counting_compiles(monkeypatch)
    compile_kernel(spec)
    assert len(calls) == 1


@needs_nvcc
def test_the_files_nvcc_lists_are_the_same_before_and_after_a_compile(tmp_path: Path) -> None:
    """`lark batch` keys a task before it runs (nvcc -M) and again when resuming (the cache entry)."""
    spec = spec_of(write_task(tmp_path / "relu"))
    before = kernel_inputs(spec)
    compile_kernel(spec)
    after = kernel_inputs(spec)
    assert before == after
    listed = {Path(path).name for path, _ in after["inputs"]}
    assert {"kernel.cu", "op.cuh", "cuda_runtime.h"} <= listed


@needs_triton
def test_an_edited_triton_helper_module_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also what sys.modules would serve: the helper imported for the first compile must not be reused."""
    calls = counting_compiles(monkeypatch, "triton")
    (tmp_path / "kernel.py").write_text(TRITON_KERNEL)
    helper = tmp_path / "scale.py"
    helper.write_text(TRITON_HELPER.format(factor="3.0"))
    spec = KernelSpec(source=tmp_path / "kernel.py", entry="scale_kernel", signature=TRITON_SIGNATURE,
                      constexprs={"BLOCK": 128})
    tripled = compile_kernel(spec)
    assert compile_kernel(spec) == tripled and len(calls) == 1
    helper.write_text(TRITON_HELPER.format(factor="5.0"))
    quintupled = compile_kernel(spec)
    assert len(calls) == 2
    assert "0f40400000" in tripled.ptx and "0f40A00000" in quintupled.ptx and "0f40400000" not in quintupled.ptx


def test_a_python_tree_sees_every_module_of_the_folder_but_hidden_ones(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / ".venv").mkdir()
    main = tmp_path / "kernel.py"
    main.write_text("import pkg.util\n")
    (tmp_path / ".venv" / "site.py").write_text("x = 1\n")
    before = digest(python_tree(main))
    (tmp_path / ".venv" / "site.py").write_text("x = 2\n")
    assert digest(python_tree(main)) == before
    (tmp_path / "pkg" / "util.py").write_text("x = 1\n")          # a new module: a new key
    assert digest(python_tree(main)) != before


# --- the reference-capture cache --------------------------------------------------------------------------


@needs_nvcc
def test_an_edited_module_of_the_reference_is_captured_again(tmp_path: Path) -> None:
    manifest = write_task(tmp_path / "relu")
    assert run_verify(manifest, 600).verdict == "verified"
    (manifest.parent / "helper.py").write_text(HELPER.format(expr="torch.relu(x) + 1"))
    assert run_verify(manifest, 600).verdict == "refuted"


def test_the_capture_key_covers_versions_and_capture_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = write_task(tmp_path / "relu").parent / "ref.py"
    before = digest(capture_cache.reference_inputs(source))
    monkeypatch.setattr(capture_cache, "package_version", lambda: "99.0")
    assert digest(capture_cache.reference_inputs(source)) != before
    monkeypatch.undo()
    monkeypatch.setattr(capture_cache, "source_digest", lambda paths: "edited capture code")
    assert digest(capture_cache.reference_inputs(source)) != before


# --- the lemma cache --------------------------------------------------------------------------------------


def test_the_lemma_cache_key_carries_the_semantics_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = Counting()
    assert CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30).cached is False
    assert CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30).cached is True
    monkeypatch.setattr(semantics_versions, "semantics_version", lambda: "edited semantics")
    again = CachingChecker(inner, DiskLemmaStore(tmp_path)).check(fresh_obligation(), 30)
    assert (again.cached, inner.calls) == (False, 2)


# --- the batch resume key ---------------------------------------------------------------------------------

OPTIONS = {"timeout_s": 600.0, "solver_s": None}


@needs_nvcc
def test_the_resume_key_covers_versions_and_moves_with_the_folder(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = write_task(tmp_path / "a" / "relu")
    key = task_key(manifest, OPTIONS)
    moved = tmp_path / "b" / "relu"
    moved.parent.mkdir()
    shutil.copytree(manifest.parent, moved)
    assert task_key(moved / "lark.toml", OPTIONS) == key
    (manifest.parent / "helper.py").write_text(HELPER.format(expr="torch.relu(x) + 1"))
    assert task_key(manifest, OPTIONS) != key
    with monkeypatch.context() as patch:
        patch.setattr(version, "lark_version", lambda: "99.0+edited")
        assert task_key(moved / "lark.toml", OPTIONS) != key
    with monkeypatch.context() as patch:
        patch.setattr(semantics_versions, "semantics_version", lambda: "edited semantics")
        assert task_key(moved / "lark.toml", OPTIONS) != key
    with monkeypatch.context() as patch:
        patch.setattr(batch, "solver_version", lambda backend: "99")
        assert task_key(moved / "lark.toml", OPTIONS) != key
    assert task_key(moved / "lark.toml", OPTIONS) == key


class InProcessFleet:
    """The fleet's interface, verifying each task here with `run_verify` (no Ray in this test)."""

    verified: list[str] = []

    def __init__(self, verifiers: int, checkers: int | None = None):
        pass

    def run(self, manifests: list[str], timeout_s: float, solver_s: float | None, on_done,
            documents=None, llm=None) -> None:
        for text in manifests:
            InProcessFleet.verified.append(Path(text).parent.name)
            result: Result = run_verify(Path(text), timeout_s, solver_s=solver_s)
            on_done(text, result, None)


@contextmanager
def no_cluster(workers: int | None = None, address: str | None = None) -> Iterator[int]:
    yield 1


@needs_nvcc
def test_a_resumed_batch_verifies_again_exactly_the_task_whose_header_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    import actors.cluster
    import actors.fleet

    monkeypatch.setattr(actors.fleet, "Fleet", InProcessFleet)
    monkeypatch.setattr(actors.cluster, "ray_session", no_cluster)
    InProcessFleet.verified = []
    manifests = [write_task(tmp_path / "lib" / name) for name in ("edited", "kept")]
    state = tmp_path / "state.jsonl"
    first = run_batch(manifests, State(state), show_progress=False)
    assert [o.result.verdict for o in first] == ["verified", "verified"]
    (tmp_path / "lib" / "edited" / "op.cuh").write_text(HEADER.format(body=WRONG))
    second = run_batch(manifests, State(state), show_progress=False)
    assert [(o.result.verdict, o.resumed) for o in second] == [("refuted", False), ("verified", True)]
    assert InProcessFleet.verified == ["edited", "kept", "edited"]


def counting_captures(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every real reference capture (a capture-cache miss)."""
    calls: list[str] = []
    capture = capture_cache.capture_reference

    def counting(source: Path, timeout_s: float = 180.0):
        calls.append(source.parent.name)
        return capture(source, timeout_s)

    monkeypatch.setattr(capture_cache, "capture_reference", counting)
    return calls


@contextmanager
def refused_cluster(workers: int | None = None, address: str | None = None) -> Iterator[int]:
    raise AssertionError("a rerun answered from stored results started Ray")
    yield 0


@needs_nvcc
def test_a_warm_batch_with_another_state_file_starts_no_ray_and_reruns_exactly_the_edited_tasks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 19 item 8: a second batch (a fresh state file: another report, another clone) of unchanged tasks
    is answered from the result store without Ray, a compile or a capture; an edited header or reference
    helper module makes exactly that task run again; another LARK or semantics version answers nothing."""
    pytest.importorskip("ray")
    import actors.cluster
    import actors.fleet

    monkeypatch.setattr(actors.fleet, "Fleet", InProcessFleet)
    monkeypatch.setattr(actors.cluster, "ray_session", no_cluster)
    InProcessFleet.verified = []
    names = ("warm_header", "warm_helper", "warm_kept")   # task names no other test of the module uses
    manifests = [write_task(tmp_path / "lib" / name) for name in names]
    first = run_batch(manifests, State(tmp_path / "first.jsonl"), show_progress=False)
    assert [o.result.verdict for o in first] == ["verified"] * 3

    monkeypatch.setattr(actors.cluster, "ray_session", refused_cluster)
    compiles, captures = counting_compiles(monkeypatch), counting_captures(monkeypatch)
    warm = run_batch(manifests, State(tmp_path / "warm.jsonl"), show_progress=True)
    assert [(o.result.verdict, o.stored) for o in warm] == [("verified", True)] * 3
    assert (compiles, captures, InProcessFleet.verified) == ([], [], list(names))
    assert ("3 of 3 tasks answered from stored results (0 from the state file, 3 from the result store); "
            "nothing to run, Ray not started") in capsys.readouterr().err

    for patched, value in ((version, "lark_version"), (semantics_versions, "semantics_version")):
        with monkeypatch.context() as patch:
            patch.setattr(patched, value, lambda: "edited")
            keys = batch.task_keys(manifests, OPTIONS)
            assert batch.answered(manifests, keys, State(tmp_path / f"{value}.jsonl"), ResultStore(), {}) == {}

    monkeypatch.setattr(actors.cluster, "ray_session", no_cluster)
    (tmp_path / "lib" / "warm_header" / "op.cuh").write_text(HEADER.format(body=WRONG))
    (tmp_path / "lib" / "warm_helper" / "helper.py").write_text(HELPER.format(expr="torch.relu(x) + 1"))
    edited = run_batch(manifests, State(tmp_path / "edited.jsonl"), show_progress=False)
    assert [(o.result.verdict, o.stored) for o in edited] == [("refuted", False), ("refuted", False),
                                                              ("verified", True)]
    assert InProcessFleet.verified == [*names, "warm_header", "warm_helper"]


@needs_nvcc
def test_lark_batch_answered_from_the_store_never_reaches_for_ray(tmp_path: Path, cache_dir: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The command itself, in a fresh process where `import ray` fails: reaching for Ray would crash the
    batch, so its success and its stderr line show that a warm rerun neither starts nor imports Ray."""
    pytest.importorskip("ray")
    import actors.cluster
    import actors.fleet

    monkeypatch.setattr(actors.fleet, "Fleet", InProcessFleet)
    monkeypatch.setattr(actors.cluster, "ray_session", no_cluster)
    manifest = write_task(tmp_path / "lib" / "cli_warm")
    assert run_batch([manifest], State(tmp_path / "first.jsonl"), show_progress=False)[0].result.verdict == "verified"
    env = {**os.environ, "LARK_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    no_ray = "import sys; sys.modules['ray'] = None; from orchestrator.cli import main; main()"
    ran = subprocess.run([sys.executable, "-c", no_ray, "batch",
                          str(tmp_path / "lib"), "--state", str(tmp_path / "cli.jsonl")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "verified  cli_warm  (resumed)" in ran.stdout
    assert "1 of 1 tasks answered from stored results" in ran.stderr and "Ray not started" in ran.stderr


@needs_nvcc
def test_a_local_batch_captures_its_references_ahead_so_its_jobs_capture_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch on a local fleet captures every reference first, with warm capture workers (torch starts once
    per worker, not once per task); its jobs then find each capture in the cache. A reference that fails to
    capture is not stored: its job captures it again and reports the failure in its own result."""
    pytest.importorskip("ray")
    import actors.cluster
    import actors.fleet

    monkeypatch.setenv("LARK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(actors.fleet, "Fleet", InProcessFleet)
    monkeypatch.setattr(actors.cluster, "ray_session", no_cluster)
    InProcessFleet.verified = []
    tasks = {"ahead_relu": "torch.relu(x)", "ahead_plus": "torch.relu(x) + 1", "ahead_broken": "undefined(x)"}
    manifests = [write_task(tmp_path / "lib" / name, act=act) for name, act in tasks.items()]
    captures = counting_captures(monkeypatch)
    outcomes = run_batch(manifests, State(tmp_path / "state.jsonl"), workers=2, show_progress=False)
    assert [o.result.verdict for o in outcomes] == ["verified", "refuted", "error"]
    assert "undefined" in outcomes[2].result.reason
    assert captures == ["ahead_broken"]
    sources = [m.parent / "ref.py" for m in manifests]
    assert capture_cache.capture_ahead(sources, workers=2) == 0     # two are cached, the third fails again
