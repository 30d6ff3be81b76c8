"""Value-range preconditions on integer inputs (`[tensors] idx = { range = [lo, hi] }`, issue 16 item 8) and
the gathers they make modelled: the kernel's by_smt instances, the ATen gathers against torch, intake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mpmath
import pytest
import torch
import z3
from click.testing import CliRunner

from lean_pool.checker import Z3Checker
from orchestrator.cli import main
from semantics import preconditions
from semantics.proof import Refused
from semantics.proof.rules import by_smt
from semantics.torch.ops import RefEnv, Unsupported, reference_outputs
from tests.test_torch_ops import _direct_graph, _evaluate, _sort

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
T = z3.Function("t", z3.BitVecSort(64), z3.BitVecSort(64))
E = z3.BitVec("e", 64)


# ---- the kernel rule ---------------------------------------------------------------------------------------

def test_by_smt_rests_on_the_stated_range_and_lists_its_instances(z3_checker) -> None:
    claim = z3.Not(T(E) > 9)
    with pytest.raises(Refused):                       # nothing is known of t's values without a precondition
        by_smt(claim, z3_checker, 10, "range", "memory_safety")
    with preconditions.stated({"t": (0, 9)}):
        theorem = by_smt(claim, z3_checker, 10, "range", "memory_safety")
    assert any(a.eq(z3.And(T(E) >= 0, T(E) <= 9)) for a in theorem.axioms)
    assert not preconditions.facts(z3.Not(claim))      # outside the block, no instance is made


def test_a_read_under_a_binder_gets_no_instance() -> None:
    j = z3.BitVec("j", 64)
    quantified = z3.ForAll([j], T(j) > 3)
    with preconditions.stated({"t": (0, 9)}):
        assert preconditions.facts(quantified) == ()
        assert len(preconditions.facts(z3.And(quantified, T(E + 1) > 3))) == 1


@pytest.fixture
def z3_checker() -> Z3Checker:
    return Z3Checker()


# ---- the gathers against torch -----------------------------------------------------------------------------

VALUES = {
    "w": torch.linspace(-2.0, 2.0, 15).reshape(5, 3),
    "i": torch.tensor([[4, 0], [2, 2]], dtype=torch.int64),
    "k": torch.tensor([3, 1, 1], dtype=torch.int64),
    "g": torch.tensor([[0, 2, 2], [1, 1, 0], [2, 0, 1], [1, 2, 2], [0, 0, 0]], dtype=torch.int64),
}
GATHERS = [
    ("aten.embedding.default", {"weight": "w", "indices": "i"}, "i", 4),
    ("aten.index_select.default", {"self": "w", "dim": 0, "index": "k"}, "k", 4),
    ("aten.gather.default", {"self": "w", "dim": 1, "index": "g"}, "g", 2),
]


def _outputs(target: str, args: dict, ranges: dict[str, tuple[int, int]]):
    graph, expected = _direct_graph(target, args, VALUES)
    names = list(VALUES)
    decls = {f"input:{n}": z3.Function(f"In{n}", z3.BitVecSort(64), _sort(v.dtype))
             for n, v in enumerate(VALUES.values())}
    tensors = {f"input:{n}": v for n, v in enumerate(VALUES.values())}
    env = RefEnv(decls, {}, {f"In{names.index(k)}": r for k, r in ranges.items()})
    return reference_outputs(graph, env), expected, tensors, decls


@pytest.mark.parametrize("target, args, index, top", GATHERS, ids=[g[0] for g in GATHERS])
def test_a_gather_with_its_precondition_matches_torch(target, args, index, top) -> None:
    (out,), expected, tensors, decls = _outputs(target, args, {index: (0, top)})
    expected = expected.double().reshape(-1)
    with mpmath.workdps(30):
        for e in range(expected.numel()):
            assert float(_nested(out(z3.BitVecVal(e, 64)), tensors, decls)) == pytest.approx(expected[e].item())


def _nested(term: z3.ExprRef, tensors: dict, decls: dict):
    """`_evaluate` for a term whose reads index by other reads: the index reads first, innermost out."""
    names = {d.name(): tensors[key].reshape(-1) for key, d in decls.items() if not tensors[key].is_floating_point()}
    while True:
        term = z3.simplify(term)
        reads = [t for t in _apps(term) if t.decl().name() in names and z3.is_bv_value(z3.simplify(t.arg(0)))]
        if not reads:
            return _evaluate(term, tensors, decls)
        term = z3.substitute(term, *[(t, z3.BitVecVal(names[t.decl().name()][z3.simplify(t.arg(0)).as_long()].item(),
                                                      t.size())) for t in reads])


def _apps(term: z3.ExprRef) -> list[z3.ExprRef]:
    found, stack = [], [term]
    while stack:
        t = stack.pop()
        if z3.is_app(t):
            found += [t] if t.num_args() == 1 else []
            stack.extend(t.children())
    return found


@pytest.mark.parametrize("target, args, index, top", GATHERS, ids=[g[0] for g in GATHERS])
def test_a_gather_without_a_fitting_precondition_is_unsupported(target, args, index, top) -> None:
    for ranges in ({}, {index: (0, top + 1)}, {index: (-1, top)}):   # none, one index too many, a negative one
        with pytest.raises(Unsupported, match="value range"):
            _outputs(target, args, ranges)


# ---- intake ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, why", [
    ("logits = { range = [0, 1] }", "signed integer input"),
    ("targets = { range = [5, 1] }", "is empty"),
    ("targets = { range = [0, 9223372036854775808] }", "does not fit int64"),
])
def test_a_range_that_cannot_be_a_precondition_is_an_intake_error(tmp_path, line, why) -> None:
    task = tmp_path / "task"
    shutil.copytree(EXAMPLES / "lib_gather_target_logit", task)
    manifest = task / "lark.toml"
    manifest.write_text(manifest.read_text().replace("targets = { range = [0, 999] }", line))
    ran = CliRunner().invoke(main, ["verify", str(task), "--json"])
    assert ran.exit_code == 3, ran.output
    assert "range" in ran.stdout and why in ran.stdout


def test_a_bool_input_carries_the_range_of_its_bytes_and_a_bool_output_none() -> None:
    from types import SimpleNamespace

    from orchestrator.pipeline import _buffers
    from semantics.torch.graph import TensorSpec

    specs = {"mask": TensorSpec((8,), "bool"), "x": TensorSpec((8,), "float32"), "y": TensorSpec((8,), "bool")}
    origin = {"mask": ("input", 1), "x": ("input", 0), "y": ("output", 0)}
    buffers = _buffers(SimpleNamespace(tensors={}), specs, origin)
    assert buffers["mask"].values == (0, 1) and buffers["mask"].contents().range() == z3.BitVecSort(8)
    assert buffers["x"].values is None and buffers["y"].values is None


# ---- witnesses respect the precondition --------------------------------------------------------------------

def _verify_json(manifest: Path) -> dict:
    result = CliRunner().invoke(main, ["verify", str(manifest), "--json"])
    return json.loads(result.stdout)


def _copy(name: str, tmp_path: Path, edit) -> Path:
    case = tmp_path / name
    shutil.copytree(EXAMPLES / name, case)
    manifest = case / "lark.toml"
    manifest.write_text(edit(manifest.read_text()))
    return manifest


def test_a_witness_of_a_loop_access_reads_only_values_in_range(tmp_path) -> None:
    """A range one row too wide: the lookup really reads past the table (idx = 50257), and the witness says
    so. The earliest-iteration probe asked the checker without the range before: its witness read
    idx[0] = 12316506399143121, a value the precondition excludes."""
    manifest = _copy("lib_embedding_lookup", tmp_path, lambda t: t.replace("[0, 50256]", "[0, 50257]"))
    result = _verify_json(manifest)
    assert result["verdict"] == "refuted" and result["properties"]["memory_safety"] == "violated"
    (finding,) = result["findings"]
    assert [int(v) for v in finding["witness"]["inputs"].values()] == [50257]


def test_a_register_defined_wherever_the_precondition_holds_is_defined(tmp_path) -> None:
    """`@%p mov %f2` with %p = idx[i] < 10 and the precondition idx in [0, 9]: every thread defines %f2
    (the register check asked without the range before, and its witness idx = 10 lay outside it). Without
    the precondition the read is a real finding, with a witness at or above 10."""
    assert _verify_json(EXAMPLES / "sound_precondition_register_ptx" / "lark.toml")["verdict"] == "verified"
    manifest = _copy("sound_precondition_register_ptx", tmp_path,
                     lambda t: t.replace("idx = { range = [0, 9] }", ""))
    result = _verify_json(manifest)
    assert result["verdict"] != "verified" and result["properties"]["memory_safety"] != "proved"


def test_the_interpreter_runs_no_witness_outside_a_precondition() -> None:
    """The concrete reproduction refuses a witness input outside its stated range (a model of an obligation
    asked without the range), and fills the elements a witness leaves open with an in-range value."""
    from semantics.concrete.reproduce import Inputs, NotReproduced
    from semantics.ptx.machine import Buffer

    idx = Buffer("idx", "int64", 16, 8, "input", values=(1, 9))
    problem = type("P", (), {"buffers": {"idx": idx}, "args": []})()
    with pytest.raises(NotReproduced, match=r"idx\[3\] = 10 lies outside its precondition \[1, 9\]"):
        Inputs.of(problem, {"idx[3]": 10}).buffers(problem)
    with pytest.raises(NotReproduced, match=r"-1 lies outside"):
        Inputs.of(problem, {"idx[*]": 2**64 - 1}).buffers(problem)
    run = Inputs.of(problem, {"idx[3]": 9}).buffers(problem)["idx"]
    assert run.values == {3: 9} and run.fill == 1
