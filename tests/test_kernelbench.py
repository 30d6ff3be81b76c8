"""KernelBench level 1 (examples/kernelbench_l1/): a correct kernel of our own per problem, at native shapes.

Every problem folder has its files and a one-line EXPECT; a representative subset (a grid-stride scalar
input, elementwise with a libm call and constants, a triu mask, a libm idiom whose paths meet a threshold's
path, a row scanned backwards, an exclusive scan, a 2-D convolution, a 2-D transposed one whose row
test nvcc hoists, an RMS norm without its eps, and buggy twins) is verified here
through `lark verify --json` and must give the verdict its EXPECT names, and a literal one ulp off a
reference constant is identified with it (axiom float.constant) unless --exact-constants.
`bench/kernelbench.py` runs them all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.capture_cache import capture_ahead
from orchestrator.manifest import load_task

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "examples" / "kernelbench_l1"
PROBLEMS = sorted(p.parent for p in SUITE.glob("*/lark.toml"))
EXIT_STATUS = {"verified": 0, "refuted": 1, "unknown": 2}
PROPERTY = {"equivalence": "equivalence", "race": "race_freedom", "barrier": "barrier_uniformity",
            "memory": "memory_safety", "termination": "termination"}
SUBSET = ["5_matrix_scalar", "14_triu_matmul", "29_softplus", "88_mingpt_new_gelu", "12_diag_matmul_wrong_stride",
          "32_hardtanh_wrong_bound", "44_avgpool1d_padding_off_by_one", "91_cumsum_reverse", "92_cumsum_exclusive",
          "63_conv2d_square", "76_conv1d_wrong_dilation", "57_conv_transpose2d",
          "36_rmsnorm_no_eps", "41_maxpool1d_padding_off_by_one"]
TIMEOUT_S = 600


def read_expect(case: Path) -> tuple[str, str]:
    lines = [line.strip() for line in (case / "EXPECT").read_text().splitlines() if line.strip()]
    assert len(lines) == 1, f"{case.name}/EXPECT must hold exactly one line, it has {lines}"
    verdict, _, detail = lines[0].partition(" ")
    assert verdict in EXIT_STATUS and detail, f"{case.name}/EXPECT: {lines[0]!r}"
    return verdict, detail


def test_every_problem_has_its_folder_and_files() -> None:
    numbers = {int(p.name.split("_", 1)[0]) for p in PROBLEMS}
    assert numbers == set(range(1, 101))
    for case in PROBLEMS:
        assert (case / "ref.py").is_file() and any(case.glob("kernel.*")), case.name
        read_expect(case)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The subset's cache directory, its references captured ahead by two warm workers as `lark batch` does
    (torch starts twice, not once per problem); each `lark verify` below reads its graph from there."""
    root = tmp_path_factory.mktemp("lark-kb-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LARK_CACHE_DIR", str(root))
        capture_ahead([load_task(SUITE / name / "lark.toml").reference.source for name in SUBSET], workers=2)
    return root


def lark_verify(case: Path, cache: Path, *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(case / "lark.toml"), "--json", *options], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "LARK_CACHE_DIR": str(cache)}, timeout=TIMEOUT_S)
    return proc, json.loads(proc.stdout)


@pytest.mark.parametrize("name", SUBSET)
def test_problem_gives_its_expected_verdict(name: str, cache: Path) -> None:
    case = SUITE / name
    expected, detail = read_expect(case)
    proc, result = lark_verify(case, cache)
    shown = json.dumps(result, indent=2)[:4000]
    assert result["verdict"] == expected, f"expected {expected} ({detail}):\n{shown}\n{proc.stderr[-2000:]}"
    assert proc.returncode == EXIT_STATUS[expected], shown
    if expected == "verified":
        assert all(state == "proved" for state in result["properties"].values()), shown
        assert result["stats"]["obligations"] > 0, shown
    elif expected == "refuted":
        wanted = [PROPERTY[word] for word in detail.split("|")]
        assert any(result["properties"][p] == "violated" for p in wanted), shown
        assert any(f["property"] in wanted and f.get("witness") for f in result["findings"]), shown
    else:
        assert detail.lower() in (result["reason"] or "").lower(), shown


def test_a_literal_one_ulp_off_is_taken_as_the_constant_and_listed_and_never_refuted_when_exact(cache: Path) -> None:
    """0.7978845f is one float32 ulp below sqrt(2/pi): verified with the identification listed; with
    --exact-constants unknown, naming the literal, and no finding reported."""
    case = SUITE / "88_mingpt_new_gelu_seven_digit_constant"
    _, result = lark_verify(case, cache)
    assert result["verdict"] == "verified", result
    listed = [a for a in result["axioms"] if a.startswith("constant 0x3F4C4229 taken as")]
    assert listed and "float.constant" in result["axioms"], result["axioms"]
    proc, exact = lark_verify(case, cache, "--exact-constants")
    assert exact["verdict"] == "unknown" and proc.returncode == 2, exact
    assert "0x3F4C4229" in exact["reason"] and exact["findings"] == [], exact
    assert not any(a.startswith("constant ") for a in exact["axioms"]), exact["axioms"]
