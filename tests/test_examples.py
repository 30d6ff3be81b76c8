"""The project's own tasks (examples/*): `lark verify --json` gives each one the verdict its EXPECT names.

EXPECT holds one line:
  `verified <tier>`                 every property proved, at least one obligation checked
  `refuted <prop>[|<prop>...]`      at least one of the named properties violated, each violated one with a
                                    concrete witness (block and thread ids, or the element never written)
  `unknown <word>`                  the JSON `reason` names <word>
Each case runs in its own subprocess, under `pytest -n 2`.

The tasks go through `lark batch examples/ --workers 2` on a real local Ray instance, once per test session
(the `batch` fixture; the xdist workers share it through a file lock), and each case checks the JSON result
the batch's JUnit report carries for it: its verdict, its properties, and each finding's witness, which the
concrete interpreter reproduces here in-process from the JSON alone. The cases of SOLO, one of each kind
of verdict and source, are also run alone through `lark verify --json` (the contract's own path): their exit
status must match the verdict, and the verdict the one the batch gave. They share the batch's cache
directory (compiled PTX, captured references, lemmas), so each obligation is solved once per session — a
lemma is a solver's answer for exactly that obligation text, and a refutation read from it is still replayed
in-process before it is reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from orchestrator.pipeline import prepare
from semantics.concrete.reproduce import reproduce
from semantics.properties.common import Finding

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ALL_MANIFESTS = sorted(EXAMPLES.glob("*/lark.toml"))
# examples/bench_only.txt: minutes each on 2 cores; bench/examples.py runs them with all the others, and
# LARK_ALL_EXAMPLES=1 brings them back into this suite.
BENCH_ONLY = {line.split("#", 1)[0].strip() for line in (EXAMPLES / "bench_only.txt").read_text().splitlines()} - {""}
MANIFESTS = [m for m in ALL_MANIFESTS
             if os.environ.get("LARK_ALL_EXAMPLES") == "1" or m.parent.name not in BENCH_ONLY]

EXIT_STATUS = {"verified": 0, "refuted": 1, "unknown": 2}
PROPERTY = {
    "equivalence": "equivalence",
    "race": "race_freedom",
    "barrier": "barrier_uniformity",
    "memory": "memory_safety",
    "termination": "termination",
}
PROPERTIES = set(PROPERTY.values())
# Run alone too: a verified CUDA, PTX, Triton and shared-memory task, a refutation of each property, several
# properties at once, and two kinds of unknown.
SOLO = {"relu_64x64", "ptx_copy", "triton_add_ragged", "shared_transpose_tiled", "bias_wrong_axis",
        "triton_add_missing_mask", "global_accumulate_no_atomic", "shared_barrier_divergent",
        "int32_index_overflow", "unsupported_popc", "sound_half_round_trip"}
SUBPROCESS_TIMEOUT_S = 900
BATCH_TIMEOUT_S = 2400


def read_expect(case: Path) -> tuple[str, str]:
    lines = [line.strip() for line in (case / "EXPECT").read_text().splitlines() if line.strip()]
    assert len(lines) == 1, f"{case.name}/EXPECT must hold exactly one line, it has {lines}"
    verdict, _, detail = lines[0].partition(" ")
    assert verdict in EXIT_STATUS, f"{case.name}/EXPECT: unknown verdict {verdict!r}"
    assert detail, f"{case.name}/EXPECT: '{verdict}' needs a second word"
    return verdict, detail


def lark(*args: str, cache: Path, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", *args], cwd=cwd,
                          env={**os.environ, "LARK_CACHE_DIR": str(cache)}, capture_output=True, text=True,
                          timeout=BATCH_TIMEOUT_S if args[0] == "batch" else SUBPROCESS_TIMEOUT_S)


@dataclass(frozen=True)
class Batch:
    root: Path                  # the session's shared directory: cache/, out/ (reports and the state file)
    returncode: int
    results: dict[str, dict]    # task name -> its JSON result, as the JUnit report carries it

    @property
    def cache(self) -> Path:
        return self.root / "cache"     # shared with the one-by-one runs

    def command(self) -> list[str]:
        return batch_command(self.root)


def batch_command(root: Path) -> list[str]:
    """`lark batch` over the examples (a list file of the top-level ones: examples/safety/ has its own batch in
    tests/test_safety.py), its reports (and so its resumable state) under `root`/out."""
    out = root / "out"
    listing = root / "examples.txt"
    listing.write_text("".join(f"{m}\n" for m in MANIFESTS))
    return ["batch", str(listing), "--workers", "2", "--junit", str(out / "j.xml"), "--report", str(out / "r.html")]


@pytest.fixture(scope="session")
def batch(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Batch:
    """`lark batch examples/ --workers 2`, run by whichever xdist worker asks first; the others wait for it."""
    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent
    done = root / "batch.json"
    with FileLock(str(root / "batch.lock")):
        if not done.is_file():
            (root / "out").mkdir(exist_ok=True)
            proc = lark(*batch_command(root), cache=root / "cache", cwd=root)
            junit = root / "out" / "j.xml"
            assert proc.returncode in (0, 1, 3) and junit.is_file(), proc.stderr[-5000:]
            results = {c.get("name"): json.loads(c.find("system-out").text)
                       for c in ET.parse(junit).getroot().iter("testcase")}
            done.write_text(json.dumps({"returncode": proc.returncode, "results": results}))
        saved = json.loads(done.read_text())
    return Batch(root, saved["returncode"], saved["results"])


def run_lark(manifest: Path, cache: Path) -> tuple[int, dict, str]:
    proc = lark("verify", str(manifest), "--json", cache=cache)
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


def reproduced(manifest: Path, findings: list[dict], cache: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the concrete interpreter says of each reported finding that it does not reproduce."""
    monkeypatch.setenv("LARK_CACHE_DIR", str(cache))
    problem = prepare(manifest).problem
    failed = []
    for f in findings:
        ok, detail = reproduce(problem, Finding(f["property"], f["message"], f["witness"]))
        if not ok:
            failed.append(f"{f['message']}: {detail}")
    return failed


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.parent.name for m in MANIFESTS])
def test_example(manifest: Path, batch: Batch, monkeypatch: pytest.MonkeyPatch) -> None:
    case = manifest.parent
    expected, detail = read_expect(case)
    result = batch.results[batch_name(manifest)]
    shown = json.dumps(result, indent=2)
    if case.name in SOLO:
        status, alone, stderr = run_lark(manifest, batch.cache)
        assert alone["verdict"] == result["verdict"], \
            f"alone: {alone['verdict']} ({alone['reason']}); in the batch: {result['verdict']} ({result['reason']})"
        assert status == EXIT_STATUS[expected], f"exit status {status} for a {expected} verdict:\n{stderr}"
        result = alone

    assert result["verdict"] == expected, f"expected {expected} ({detail}), got:\n{shown}"
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
        failed = reproduced(manifest, result["findings"], batch.cache, monkeypatch)
        assert not failed, f"findings the concrete interpreter does not reproduce: {failed}"

    else:  # unknown
        assert result["reason"], shown
        assert detail.lower() in result["reason"].lower(), f"reason does not name {detail!r}:\n{shown}"


def batch_name(manifest: Path) -> str:
    """The task's name in the batch report: the manifest's `name`."""
    return tomllib.loads(manifest.read_text())["name"]


def test_the_batch_has_every_example_and_a_rerun_resumes_them_all(batch: Batch) -> None:
    assert len(batch.results) == len(MANIFESTS)
    rerun = lark(*batch.command(), cache=batch.cache, cwd=batch.root)
    assert rerun.returncode == batch.returncode
    assert rerun.stdout.count("(resumed)") == len(MANIFESTS), rerun.stdout


def test_every_example_has_its_files() -> None:
    assert len(MANIFESTS) >= 14
    assert BENCH_ONLY <= {m.parent.name for m in ALL_MANIFESTS}, "examples/bench_only.txt names a missing example"
    assert SOLO <= {m.parent.name for m in MANIFESTS}, "SOLO names an example this suite does not run"
    for manifest in ALL_MANIFESTS:
        case = manifest.parent
        assert (case / "EXPECT").is_file(), case.name
        assert (case / "ref.py").is_file(), case.name
        assert any(case.glob("kernel.*")), case.name
        read_expect(case)
