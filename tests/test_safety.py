"""Safety-only tasks (issue 20): no [reference], declared buffers, unbounded sizes and symbolic scalars.

The intake tests need no compiler. The end-to-end tests run every task of examples/safety (nvcc on PATH)
through `lark batch`, and those of SOLO (one of each verdict and property) alone through `lark verify --json`
too, each in its own subprocess with its exit status; they check the verdict, the property states and that
every refutation carries concrete ids (and, for a symbolic size, the size that exposes it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from orchestrator.manifest import IntakeError, load_task
from tests.test_examples import EXIT_STATUS, PROPERTY, read_expect, witness_problem

REPO = Path(__file__).resolve().parents[1]
SAFETY = REPO / "examples" / "safety"
TIMEOUT_S = 600

COPY = """\
[kernel]
source = "kernel.cu"
entry = "copy"

[launch]
grid = [4]
block = [256]
args = ["x", "y", "n"]

[tensors]
x = { shape = [1000], dtype = "float32" }
y = { shape = "unbounded", dtype = "float32", init = "zeros" }

[scalars]
n = { range = [1, 1000] }
"""


def write_task(folder: Path, manifest: str) -> Path:
    (folder / "kernel.cu").write_text("// placeholder\n")
    (folder / "lark.toml").write_text(manifest)
    return folder / "lark.toml"


def intake_error(tmp_path: Path, manifest: str) -> IntakeError:
    with pytest.raises(IntakeError) as info:
        load_task(write_task(tmp_path, manifest))
    return info.value


def lark_verify(manifest: Path, cache: Path) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(manifest), "--json"], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S,
                          env={**os.environ, "LARK_CACHE_DIR": str(cache)})
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


# --- intake -----------------------------------------------------------------------------------------------


def test_safety_only_manifest_loads(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, COPY))
    assert task.safety_only and task.reference is None
    assert task.tensors["x"].shape == (1000,) and not task.tensors["x"].unbounded
    assert task.tensors["y"].unbounded and task.tensors["y"].shape is None and task.tensors["y"].init == "zeros"
    assert (task.scalars["n"].lo, task.scalars["n"].hi) == (1, 1000)


@pytest.mark.parametrize(("old", "new", "field"), [
    ('x = { shape = [1000], dtype = "float32" }', 'x = { dtype = "float32" }', "tensors.x.shape"),
    ('x = { shape = [1000], dtype = "float32" }', "x = { shape = [1000] }", "tensors.x.dtype"),
    ('y = { shape = "unbounded", dtype = "float32", init = "zeros" }', 'y = { shape = "many", dtype = "float32" }',
     "tensors.y.shape"),
    ("n = { range = [1, 1000] }", "n = { range = [5, 1] }", "scalars.n.range"),
    ("n = { range = [1, 1000] }", "n = { range = [1] }", "scalars.n.range"),
    ("n = { range = [1, 1000] }", "m = { range = [1, 2] }", "launch.args[2]"),
])
def test_bad_safety_manifest_names_the_field(tmp_path: Path, old: str, new: str, field: str) -> None:
    assert old in COPY
    err = intake_error(tmp_path, COPY.replace(old, new))
    assert err.field == field, str(err)
    assert str(err).startswith(field)


def test_a_buffer_not_passed_is_an_error(tmp_path: Path) -> None:
    extra = COPY.replace("[scalars]", 'z = { shape = [4], dtype = "float32" }\n\n[scalars]')
    assert intake_error(tmp_path, extra).field == "tensors.z"


def test_unbounded_and_scalars_need_a_safety_only_task(tmp_path: Path) -> None:
    (tmp_path / "ref.py").write_text("# placeholder\n")
    reference = '[reference]\nsource = "ref.py"\ninputs = ["x"]\noutputs = ["y"]\n\n'
    with_ref = COPY.replace("[tensors]", reference + "[tensors]")
    assert intake_error(tmp_path, with_ref).field == "tensors.y.shape"
    bounded = with_ref.replace('shape = "unbounded", ', "shape = [1000], ")
    assert intake_error(tmp_path, bounded).field == "scalars"


def test_bad_manifest_exits_3_naming_the_field(tmp_path: Path, cache: Path) -> None:
    broken = COPY.replace('x = { shape = [1000], dtype = "float32" }', 'x = { dtype = "float32" }')
    manifest = write_task(tmp_path, broken)
    status, result = lark_verify(manifest, cache)
    assert status == 3 and result["verdict"] == "error"
    assert result["reason"].startswith("tensors.x.shape")


# --- end to end -------------------------------------------------------------------------------------------


def run_case(name: str, cache: Path) -> tuple[int, dict]:
    return lark_verify(SAFETY / name / "lark.toml", cache)


def located(part: dict) -> bool:
    return all(isinstance(part.get(k), list) and len(part[k]) == 3 for k in ("block", "thread"))


def test_safety_only_task_verifies_with_equivalence_not_applicable(cache: Path) -> None:
    status, result = run_case("copy_guarded", cache)
    assert (status, result["verdict"]) == (0, "verified"), result
    assert result["properties"]["equivalence"] == "not_applicable"
    assert {result["properties"][p] for p in ("race_freedom", "barrier_uniformity", "memory_safety",
                                              "termination")} == {"proved"}


def test_racy_task_is_refuted_with_block_and_thread_ids(cache: Path) -> None:
    status, result = run_case("race_ww_within_block", cache)
    assert (status, result["verdict"]) == (1, "refuted"), result
    (finding,) = [f for f in result["findings"] if f["property"] == "race_freedom"]
    first, second = finding["witness"]["first"], finding["witness"]["second"]
    assert located(first) and located(second)
    assert first["block"] == second["block"] and first["thread"] != second["thread"]
    assert first["thread"][0] // 2 == second["thread"][0] // 2 == finding["witness"]["element_index"]


def test_out_of_bounds_is_refuted_against_the_declared_size(cache: Path) -> None:
    status, result = run_case("copy_unguarded", cache)
    assert (status, result["properties"]["memory_safety"]) == (1, "violated"), result
    witness = result["findings"][0]["witness"]
    assert witness["buffer_elements"] == 1000 and witness["element_index"] >= 1000 and located(witness)


def test_unbounded_buffers_make_memory_safety_not_applicable(cache: Path) -> None:
    status, result = run_case("unbounded_copy", cache)
    assert (status, result["verdict"]) == (0, "verified"), result
    assert result["properties"]["memory_safety"] == "not_applicable"
    assert result["properties"]["race_freedom"] == "proved"
    status, racy = run_case("race_unbounded_overlap", cache)
    assert (status, racy["properties"]["race_freedom"]) == (1, "violated"), racy


def test_symbolic_size_verifies_for_the_whole_range(cache: Path) -> None:
    status, result = run_case("symbolic_n_copy", cache)
    assert (status, result["verdict"]) == (0, "verified"), result
    assert result["properties"]["memory_safety"] == "proved"


def test_symbolic_size_racy_twin_names_threads_and_the_size(cache: Path) -> None:
    status, result = run_case("race_symbolic_n_clamp", cache)
    assert (status, result["verdict"]) == (1, "refuted"), result
    (finding,) = [f for f in result["findings"] if f["property"] == "race_freedom"]
    witness = finding["witness"]
    n = witness["sizes"]["n"]
    assert 1 <= n < 1024, witness        # the race needs threads past n: fewer than the 1024 launched
    assert f"n = {n}" in finding["message"]
    assert located(witness["first"]) and located(witness["second"])
    assert witness["element_index"] == n - 1


def test_symbolic_size_out_of_bounds_names_a_size_past_the_buffer(cache: Path) -> None:
    status, result = run_case("symbolic_n_oob", cache)
    assert (status, result["properties"]["memory_safety"]) == (1, "violated"), result
    witness = result["findings"][0]["witness"]
    assert witness["sizes"]["n"] > 1000 and witness["element_index"] >= 1000


# --- examples/safety: every case alone, and the whole folder through `lark batch` -------------------------

CASES = sorted(SAFETY.glob("*/lark.toml"))
SOLO = {"shared_tree_reduction", "symbolic_n_grid_stride", "race_tree_reduction_no_sync", "race_shared_data_index",
        "barrier_divergent_loop_trip", "nested_conv1d_long_window", "syncwarp_exchange"}
SOLO_CASES = [m for m in CASES if m.parent.name in SOLO]


def check_expected(case: Path, result: dict) -> None:
    """The verdict EXPECT names; for a refutation, a named property violated with a concrete witness."""
    expected, detail = read_expect(case)
    shown = json.dumps(result, indent=2)
    assert result["verdict"] == expected, f"expected {expected} ({detail}), got:\n{shown}"
    assert result["properties"]["equivalence"] in ("not_applicable", "unknown"), shown
    if expected == "verified":
        assert set(result["properties"].values()) <= {"proved", "not_applicable"}, shown
    elif expected == "refuted":
        wanted = [PROPERTY[word] for word in detail.split("|")]
        violated = [p for p in wanted if result["properties"][p] == "violated"]
        assert violated, shown
        findings = [f for f in result["findings"] if f["property"] in violated]
        assert any(witness_problem(f) is None for f in findings), shown
    else:
        assert detail.lower() in (result["reason"] or "").lower(), shown


@pytest.mark.parametrize("manifest", SOLO_CASES, ids=[m.parent.name for m in SOLO_CASES])
def test_safety_example_alone(manifest: Path, cache: Path) -> None:
    status, result = lark_verify(manifest, cache)
    check_expected(manifest.parent, result)
    assert status == EXIT_STATUS[result["verdict"]], result


def test_safety_examples_in_a_batch(tmp_path: Path, cache: Path) -> None:
    junit, report = tmp_path / "j.xml", tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "batch", str(SAFETY),
                           "--workers", "2", "--junit", str(junit), "--report", str(report)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=2400,
                          env={**os.environ, "LARK_CACHE_DIR": str(cache)})
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    results = {c.get("name"): json.loads(c.find("system-out").text) for c in ET.parse(junit).getroot().iter("testcase")}
    assert len(results) == len(CASES)
    for manifest in CASES:
        check_expected(manifest.parent, results[f"safety_{manifest.parent.name}"])
    page = report.read_text()
    assert "safety-only" in page and "not asked" in page


def test_every_safety_example_has_its_files() -> None:
    assert len(CASES) >= 30 and SOLO <= {m.parent.name for m in CASES}
    for manifest in CASES:
        assert (manifest.parent / "kernel.cu").is_file() and not (manifest.parent / "ref.py").exists()
        assert load_task(manifest).safety_only, manifest
        read_expect(manifest.parent)
