"""Certificates and witnesses: `lark verify --certificate/--witness` writes them, `lark check` re-checks them.

Tasks are written here (CUDA, so nvcc is needed). One verified certificate (a grid-stride vector add: it
has a termination hint and coverage hints) is shared by the tampering tests: each copies the task and the
certificate, changes one thing, and asserts that `lark check` names what no longer matches. Tampering
that the manifest alone reveals fails before the reference is captured again, so those tests are cheap.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lean_pool.checker import PROVED, REFUTED
from lean_pool.cvc5_checker import Cvc5Checker, standard_smt2
from orchestrator.cert_schema import json_schema
from orchestrator.cli import main
from semantics.torch import capture

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not on PATH")

REPO = Path(__file__).resolve().parents[1]

VADD = """extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        c[i] = a[i] + b[i];
    }
}
"""
VADD_REF = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.rand(100000), torch.rand(100000)]


def get_init_inputs():
    return []
"""
RELU_REF = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(4096)]


def get_init_inputs():
    return []
"""
RELU_PAST_THE_END = """extern "C" __global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""
RELU_LEAKY = """extern "C" __global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.5f * x[i];
}
"""


def write_task(folder: Path, kernel: str, ref: str, entry: str, grid: int, block: int, args: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text(kernel)
    (folder / "ref.py").write_text(ref)
    inputs, outputs = ('["a", "b"]', '["c"]') if entry == "vadd" else ('["x"]', '["y"]')
    (folder / "lark.toml").write_text(
        f'name = "{folder.name}"\n\n[kernel]\nsource = "kernel.cu"\nentry = "{entry}"\n\n'
        f"[launch]\ngrid = [{grid}]\nblock = [{block}]\nargs = {args}\n\n"
        f'[reference]\nsource = "ref.py"\ninputs = {inputs}\noutputs = {outputs}\n')
    return folder / "lark.toml"


def lark(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture(scope="module", autouse=True)
def warm_captures():
    """`lark check` captures each reference afresh (caches are untrusted): through one warm worker here, a
    fork each instead of torch's start each (the tests run a score of checks in this process)."""
    capture.keep_warm()
    yield
    capture.stop_warm()


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding task/ (a verified grid-stride vector add) and cert.json, its certificate."""
    base = tmp_path_factory.mktemp("certified")
    manifest = write_task(base / "task", VADD, VADD_REF, "vadd", 40, 128, '["a", "b", "c", 100000]')
    status, output = lark("verify", manifest, "--json", "--certificate", base / "cert.json")
    assert status == 0, output
    assert json.loads(output)["certificate"] == str(base / "cert.json")
    return base


@pytest.fixture
def copy(certified: Path, tmp_path: Path) -> Path:
    """A private copy of the task and its certificate, to tamper with."""
    shutil.copytree(certified, tmp_path / "copy")
    return tmp_path / "copy"


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def edit_text(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def rejected(folder: Path) -> str:
    status, output = lark("check", folder / "cert.json")
    assert status == 1, output
    assert "certificate rejected" in output
    return output


ROW_SUM = """extern "C" __global__ void row_sum(const float* __restrict__ x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) acc += x[r * cols + c];
        y[r] = acc;
    }
}
"""
ROW_SUM_REF = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.rand(512, 1000)]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def row_sum(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding task/ (a verified row sum, its loop summarised as a Sum and matched by `reindex_lanes`)
    and cert.json."""
    base = tmp_path_factory.mktemp("row_sum")
    manifest = write_task(base / "task", ROW_SUM, ROW_SUM_REF, "row_sum", 4, 128, '["x", "y", 512, 1000]')
    status, output = lark("verify", manifest, "--json", "--certificate", base / "cert.json")
    assert status == 0 and json.loads(output)["certificate"], output
    return base


@pytest.fixture
def row_sum_copy(row_sum: Path, tmp_path: Path) -> Path:
    shutil.copytree(row_sum, tmp_path / "copy")
    return tmp_path / "copy"


def nodes(cert: dict, rule: str) -> list[dict]:
    return [n for n in cert["proof"]["nodes"] if n["rule"] == rule]


def goal_node(cert: dict, prop: str) -> dict:
    return cert["proof"]["nodes"][next(g["node"] for g in cert["proof"]["goals"] if g["property"] == prop)]


def test_certificate_records_the_task_the_hints_and_the_proof(certified: Path) -> None:
    cert = json.loads((certified / "cert.json").read_text())
    assert (cert["schema"], cert["version"], cert["manifest"]) == ("lark.certificate", 2, "task/lark.toml")
    task = cert["task"]
    kernel_text = (certified / "task" / "kernel.cu").read_text()
    assert task["kernel"]["sha256"] == hashlib.sha256(kernel_text.encode()).hexdigest()
    assert cert["kernel_source_text"] == kernel_text
    assert all(len(task[part][key]) == 64 for part, key in
               [("kernel", "ptx_sha256"), ("reference", "sha256"), ("reference", "graph_hash")])
    assert task["launch"] == {"grid": [40, 1, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 0}
    assert task["args"] == ["a", "b", "c", 100000]
    assert task["buffers"]["c"] == {"dtype": "float32", "numel": 100000, "role": "output", "init": None}
    assert {key.split(":")[0] for key in cert["hints"]} == {"termination", "coverage"}
    assert cert["axioms"]["used"] == ["float.reals"] and cert["axioms"]["table_version"]
    proof = cert["proof"]
    assert {g["property"] for g in proof["goals"]} == {"memory_safety", "race_freedom", "equivalence"}
    assert all(0 <= g["node"] < len(proof["nodes"]) for g in proof["goals"])
    facts = [proof["nodes"][n] for n in proof["facts"]]   # the loop's exact exit: left by K, and runs until K
    assert [f["inputs"]["prop"] for f in facts] == ["termination", "termination"]
    for node in proof["nodes"]:
        assert node["rule"] == "by_smt" and "checker" not in node["inputs"]
        assert [ob["backend"] for ob in node["obligations"]] == ["z3"]


def test_a_proof_is_a_dag_of_rules_with_terms_in_a_shared_table(row_sum: Path) -> None:
    cert = json.loads((row_sum / "cert.json").read_text())
    proof = cert["proof"]
    (reindex,) = nodes(cert, "reindex_lanes")
    assert {"source", "target", "lanes", "psis", "under"} <= set(reindex["inputs"])
    (closing,) = nodes(cert, "substitute_under")
    assert goal_node(cert, "equivalence") == closing or goal_node(cert, "equivalence")["rule"] == "by_smt"
    for n, node in enumerate(proof["nodes"]):
        refs = re.findall(r"'node': (\d+)", str(node["inputs"]))
        assert all(int(r) < n for r in refs), "premises come first"
    assert len(set(proof["declarations"])) == len(proof["declarations"])


def test_certificate_records_how_it_was_solved_and_check_solves_the_same_way(copy: Path) -> None:
    """STYLE 9 / issue 19 item 7: the seed and work limit are recorded, and `lark check` uses the recorded
    ones: a work limit of 1 leaves every side condition unknown to z3 (a proof cannot be replayed that way),
    while the same certificate with the recorded limit holds."""
    cert = json.loads((copy / "cert.json").read_text())
    assert cert["solving"] == {"z3_seed": 0, "z3_rlimit": 50_000_000, "cvc5_seed": 0}
    edit_json(copy / "cert.json", lambda c: c["solving"].update(z3_rlimit=1))
    output = rejected(copy)
    assert "the proof does not replay: node 0 (by_smt) is refused by the kernel" in output and "unknown" in output


def test_check_accepts_with_both_solvers(certified: Path, row_sum: Path) -> None:
    for folder in (certified, row_sum):
        status, output = lark("check", folder / "cert.json", "--solver", "both")
        assert status == 0, output
        assert "certificate holds" in output and "z3 and cvc5" in output


# What `lark check` of a certificate must not import: the tactic rows of the trusted-base table, the search, the
# provers, the LLM agents, and verify's own driver.
def test_no_certificate_is_written_for_outputs_accumulated_with_atomics(tmp_path: Path) -> None:
    """lark check cannot re-derive atomics from kernel theorems yet: verify says so instead of writing a
    certificate that check would reject."""
    status, output = lark("verify", REPO / "examples" / "atomic_total_sum" / "lark.toml", "--json", "--certificate",
                          tmp_path / "cert.json")
    result = json.loads(output)
    assert status == 0 and result["verdict"] == "verified", output
    assert "certificate not written: out is accumulated with atomics" in result["reason"]
    assert not (tmp_path / "cert.json").exists()


SEARCH = ("orchestrator.provers", "orchestrator.search", "orchestrator.llm", "orchestrator.job", "semantics.verdict")


def test_check_runs_in_a_fresh_process_and_imports_no_tactic(row_sum: Path) -> None:
    """Term texts must not depend on what the writing process did before, and the check runs no search."""
    script = ("import json, sys\nfrom orchestrator.cli import main\ntry:\n    main(sys.argv[1:])\n"
              "except SystemExit as exit:\n    print(json.dumps([exit.code, sorted(sys.modules)]))\n")
    proc = subprocess.run([sys.executable, "-c", script, "check", str(row_sum / "cert.json")], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    status, modules = json.loads(proc.stdout.splitlines()[-1])
    assert status == 0, proc.stdout + proc.stderr
    sys.path.insert(0, str(REPO / "bench"))
    import trusted_base
    tactics = [path.removesuffix(".py").replace("/", ".") for path, role, _ in trusted_base.GROUPS
               if role != trusted_base.TRUSTED]
    assert "semantics.proof.sums" in modules and "semantics.derive" in modules
    imported = [m for m in modules if any(m == t or m.startswith(t + ".") for t in (*tactics, *SEARCH))]
    assert not imported, f"lark check imported {imported}"


def test_changed_kernel_source_is_named(copy: Path) -> None:
    edit_text(copy / "task" / "kernel.cu", "c[i] = a[i] + b[i];", "c[i] = a[i] + b[i];  // edited")
    assert "the kernel source no longer matches (kernel.sha256)" in rejected(copy)


def test_changed_reference_is_named(copy: Path) -> None:
    edit_text(copy / "task" / "ref.py", "return a + b", "return b + a")
    assert "the reference source no longer matches (reference.sha256)" in rejected(copy)


@pytest.mark.parametrize("where", ["manifest", "certificate"])
def test_changed_launch_is_named(copy: Path, where: str) -> None:
    if where == "manifest":
        edit_text(copy / "task" / "lark.toml", "grid = [40]", "grid = [20]")
        expected = "task.launch.grid no longer matches: recorded [40, 1, 1], now [20, 1, 1]"
    else:
        edit_json(copy / "cert.json", lambda c: c["task"]["launch"].update(grid=[20, 1, 1]))
        expected = "task.launch.grid no longer matches: recorded [20, 1, 1], now [40, 1, 1]"
    assert expected in rejected(copy)


def test_changed_binding_is_named(copy: Path) -> None:
    edit_text(copy / "task" / "lark.toml", 'args = ["a", "b", "c", 100000]', 'args = ["b", "a", "c", 100000]')
    expected = "task.args no longer matches: recorded ['a', 'b', 'c', 100000], now ['b', 'a', 'c', 100000]"
    assert expected in rejected(copy)


def test_changed_graph_hash_is_named(copy: Path) -> None:
    edit_json(copy / "cert.json", lambda c: c["task"]["reference"].update(graph_hash="0" * 64))
    assert "the reference's exported graph no longer matches (reference.graph_hash)" in rejected(copy)


def test_changed_hint_is_named(copy: Path) -> None:
    """A coverage hint naming the wrong writer: the goal derived from it is not what the proof's theorem states."""
    def wrong_writer(cert: dict) -> None:
        key = next(k for k in cert["hints"] if k.startswith("coverage:"))
        cert["proof"]["terms"].append({"sort": "(_ BitVec 32)", "sexpr": "#x00000000"})
        cert["hints"][key]["tid.x"] = {"term": len(cert["proof"]["terms"]) - 1}

    edit_json(copy / "cert.json", wrong_writer)
    assert "no kernel theorem states the goal of equivalence: every element of c is written" in rejected(copy)


def test_a_hint_outside_the_term_table_is_named(copy: Path) -> None:
    """A hint's terms are references into the proof's term table: one past its end is refused by name."""
    def dangling(cert: dict) -> None:
        key = next(k for k in cert["hints"] if k.startswith("coverage:"))
        cert["hints"][key]["tid.x"] = {"term": len(cert["proof"]["terms"])}

    edit_json(copy / "cert.json", dangling)
    assert "which the table does not have" in rejected(copy)


def test_a_swapped_bijection_is_refused(row_sum_copy: Path) -> None:
    """Two lanes of the unrolled loop trade their index maps: the reindexing's body obligations fail."""
    def swap(cert: dict) -> None:
        (node,) = nodes(cert, "reindex_lanes")
        lanes = node["inputs"]["lanes"]
        lanes[0][2], lanes[1][2] = lanes[1][2], lanes[0][2]

    edit_json(row_sum_copy / "cert.json", swap)
    output = rejected(row_sum_copy)
    assert "(reindex_lanes) is refused by the kernel: by_smt: reindex_lanes: " in output


def test_a_dropped_obligation_leaves_its_goal_unstated(copy: Path) -> None:
    """The race goal's theorem replaced by another (the memory-safety claim proved twice): the proof replays,
    but no theorem states the race goal."""
    def drop(cert: dict) -> None:
        race = goal_node(cert, "race_freedom")
        race["inputs"]["claim"] = goal_node(cert, "memory_safety")["inputs"]["claim"]

    edit_json(copy / "cert.json", drop)
    assert "no kernel theorem states the goal of race_freedom: store line" in rejected(copy)


def test_a_dropped_side_condition_is_not_taken(copy: Path) -> None:
    """The loop's exit no longer proved (its theorem replaced by the other fact's): the derivation takes neither
    the exact exit nor the bound, and termination is not established."""
    def drop(cert: dict) -> None:
        exits, runs = (cert["proof"]["nodes"][n] for n in cert["proof"]["facts"])
        assert "is left by iteration" in exits["inputs"]["name"]
        exits["inputs"]["claim"] = runs["inputs"]["claim"]

    edit_json(copy / "cert.json", drop)
    assert "termination: could not bound the iterations of the loop" in rejected(copy)


@pytest.mark.parametrize("tamper, named", [
    (lambda cert: nodes(cert, "substitute_under")[0]["inputs"].update(target={"term": 0}),
     "(substitute_under) is refused by the kernel: substitute_under: the target is not"),
    (lambda cert: nodes(cert, "sym")[0]["inputs"].update(theorem={"node": 0}),
     "(sym) is refused by the kernel"),
    (lambda cert: cert["proof"]["terms"][goal_node(cert, "race_freedom")["inputs"]["claim"]["term"]].update(
        sexpr="false"), "(by_smt) is refused by the kernel: by_smt: race_freedom"),
    (lambda cert: cert["proof"]["nodes"][0].update(rule="trust_me"), "applies trust_me, which is not a rule"),
    (lambda cert: cert["proof"]["nodes"][0]["inputs"].update(claim={"node": 5}), "is not an earlier one"),
    (lambda cert: cert["proof"]["nodes"][0]["inputs"].update(extra=1), "its inputs do not fit the rule"),
])
def test_a_rule_applied_to_inputs_it_does_not_match_is_refused(row_sum_copy: Path, tamper, named) -> None:
    edit_json(row_sum_copy / "cert.json", tamper)
    assert named in rejected(row_sum_copy)


def test_a_proof_about_another_kernel_is_rejected(certified: Path, row_sum: Path, tmp_path: Path) -> None:
    """The row sum's identity with the vector add's proof: every stage up to the replay passes, and no goal
    of the row sum is stated."""
    shutil.copytree(row_sum, tmp_path / "spliced")
    vadd = json.loads((certified / "cert.json").read_text())
    edit_json(tmp_path / "spliced" / "cert.json", lambda c: c.update(proof=vadd["proof"], hints=vadd["hints"]))
    output = rejected(tmp_path / "spliced")
    assert "no kernel theorem states the goal of" in output


def test_changed_axiom_list_is_named(copy: Path) -> None:
    edit_json(copy / "cert.json", lambda c: c["axioms"].update(used=["rcp.approx"]))
    assert "the axioms used no longer match: certified ['rcp.approx'], re-derived ['float.reals']" in rejected(copy)


def test_other_axiom_table_is_named(copy: Path) -> None:
    edit_json(copy / "cert.json", lambda c: c["axioms"].update(table_version="1999.1"))
    assert "axiom table version 1999.1 is not the current" in rejected(copy)


def test_unreadable_document_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"schema": "lark.certificate", "version": 99}')
    status, output = lark("check", tmp_path / "x.json")
    assert status == 3 and "this LARK reads version 2" in output


def test_a_certificate_without_its_proof_is_refused_by_name(tmp_path: Path) -> None:
    """Version 1 held hints and obligations for a re-run of the tactics; `lark check` no longer runs them."""
    (tmp_path / "old.json").write_text('{"schema": "lark.certificate", "version": 1}')
    status, output = lark("check", tmp_path / "old.json")
    assert status == 3 and "holds hints and obligations, not the proof" in output


@pytest.fixture(scope="module")
def past_the_end(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The witness of a relu whose guard lets thread n read and write one element past the end."""
    base = tmp_path_factory.mktemp("past_the_end")
    manifest = write_task(base / "task", RELU_PAST_THE_END, RELU_REF, "relu", 17, 256, '["x", "y", 4096]')
    status, output = lark("verify", manifest, "--json", "--witness", base / "witness.json")
    assert status == 1, output
    return base / "witness.json"


def test_out_of_bounds_witness_replays(past_the_end: Path) -> None:
    finding = json.loads(past_the_end.read_text())["findings"][0]
    assert finding["property"] == "memory_safety" and finding["witness"]["element_index"] == 4096
    status, output = lark("check", past_the_end)
    assert status == 0, output
    assert "witness reproduces" in output


def test_wrong_thread_in_a_witness_does_not_replay(past_the_end: Path, tmp_path: Path) -> None:
    shutil.copytree(past_the_end.parent, tmp_path / "copy")
    edit_json(tmp_path / "copy" / "witness.json", lambda w: w["findings"][0]["witness"].update(block=[0, 0, 0]))
    status, output = lark("check", tmp_path / "copy" / "witness.json")
    assert status == 1, output
    assert "memory_safety witness does not reproduce: the concrete interpreter does not show it: block [0, 0, 0] " \
        "thread" in output


def test_wrong_value_witness_replays_on_real_numbers(tmp_path: Path) -> None:
    manifest = write_task(tmp_path / "task", RELU_LEAKY, RELU_REF, "relu", 16, 256, '["x", "y", 4096]')
    status, output = lark("verify", manifest, "--json", "--witness", tmp_path / "witness.json")
    assert status == 1, output
    witness = json.loads((tmp_path / "witness.json").read_text())["findings"][0]["witness"]
    (x,) = witness["inputs"].values()
    assert x < 0 and witness["reference_value"] == 0 and witness["kernel_value"] == pytest.approx(0.5 * x)
    status, output = lark("check", tmp_path / "witness.json")
    assert status == 0, output


def test_schema_file_is_generated_from_the_models() -> None:
    assert json.loads((REPO / "docs" / "certificate.schema.json").read_text()) == json_schema()


def test_z3_text_is_made_standard_for_cvc5() -> None:
    text = "(declare-fun tid.x' () (_ BitVec 8))\n(assert (= (bvudiv_i tid.x' #x00) #x01))\n(check-sat)\n"
    assert standard_smt2(text) == \
        "(declare-fun |tid.x'| () (_ BitVec 8))\n(assert (= (bvudiv |tid.x'| #x00) #x01))\n(check-sat)\n"
    assert Cvc5Checker().check_text(text, 10).status == PROVED      # x / 0 is all ones, never 1
    assert Cvc5Checker().check_text(text.replace("#x01", "#xff"), 10).status == REFUTED


def test_ideal_functions_do_not_clash_with_cvc5_builtins() -> None:
    """The semantics' uninterpreted `exp` is not cvc5's transcendental `exp` (logic ALL has it built in)."""
    declare = "(declare-fun exp (Real) Real)\n(declare-fun v () Real)\n"
    assert Cvc5Checker().check_text(declare + "(assert (= (exp 0.0) 2.0))\n", 30).status == REFUTED
    silu = "(assert (> (exp (- v)) 0.0))\n" \
           "(assert (distinct (/ v (+ 1.0 (exp (- v)))) (* v (/ 1.0 (+ (exp (- v)) 1.0)))))"
    assert Cvc5Checker().check_text(declare + silu, 30).status == PROVED
