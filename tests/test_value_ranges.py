"""What the inputs' value-range preconditions decide in the reference (`semantics.torch.ranges`): integer
comparisons settled by interval arithmetic, gathers whose index is a conditional of ranged reads, and
integer sums of one constant summand: together they model `F.cross_entropy` (nll_loss's ignore_index test
and its count of counted targets), checked against torch."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
import z3

from semantics.replay import Evaluator
from semantics.torch.capture import RefGraph, capture_references
from semantics.torch.ops import RefEnv, Unsupported, reference_outputs
from semantics.torch.ranges import interval, settled
from tests.test_torch_ops import _model, _sort

T = z3.Function("t", z3.BitVecSort(64), z3.BitVecSort(64))
U = z3.Function("u", z3.BitVecSort(64), z3.BitVecSort(64))
IDX = z3.BitVec("i", 64)
RANGES = {"t": (0, 9)}


def _k(v: int) -> z3.BitVecRef:
    return z3.BitVecVal(v, 64)


@pytest.mark.parametrize("comparison, answer", [
    (T(IDX) != _k(-100), True),           # nll_loss's ignore_index test
    (T(IDX) == _k(-100), False),
    (T(IDX) < _k(10), True),
    (T(IDX) >= _k(10), False),
    (T(IDX) > _k(-1), True),
    (T(IDX) <= _k(-1), False),
    (T(IDX) < _k(5), None),               # depends on the element
    (T(IDX) == _k(3), None),
    (U(IDX) != _k(-100), None),           # u has no stated range
    (z3.If(T(IDX) > _k(4), T(IDX), _k(0)) != _k(-100), True),   # the If's value is one of its branches'
    (z3.If(T(IDX) > _k(4), T(IDX), _k(-100)) != _k(-100), None),
])
def test_a_comparison_is_settled_only_where_the_ranges_decide_it(comparison, answer) -> None:
    got = settled(RANGES, comparison)
    if answer is None:
        assert got.eq(comparison)
    else:
        assert (z3.is_true(got) or z3.is_false(got)) and z3.is_true(got) == answer


def test_an_interval_is_the_hull_of_constants_ranged_reads_and_ifs() -> None:
    assert interval(RANGES, z3.If(T(IDX) != _k(-100), T(IDX), _k(0))) == (0, 9)
    assert interval(RANGES, z3.If(T(IDX) > _k(3), _k(-4), T(IDX))) == (-4, 9)
    assert interval(RANGES, z3.SignExt(32, z3.Extract(31, 0, T(IDX)))) is None     # an extraction: unbounded
    assert interval(RANGES, T(IDX) + 1) is None
    assert interval(RANGES, U(IDX)) is None
    named = {"bvneg": (0, 9)}                  # a range on an input named like a built-in op
    assert interval(named, -z3.BitVec("v", 64)) is None


def test_nothing_is_settled_without_a_precondition() -> None:
    c = T(IDX) != _k(-100)
    assert settled({}, c).eq(c)


# ---- against torch ----------------------------------------------------------------------------------------

ROWS, CLASSES = 4, 6
MODELS = {
    "cross_entropy": ("F.cross_entropy(p, t)", "p, t"),
    "counted": ("(t != -100).sum().float() + (t >= 0).sum(dim=0).float()", "p, t"),
    "varying": ("(t > 2).sum().float()", "p, t"),
}


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, RefGraph]:
    directory = tmp_path_factory.mktemp("ranges")
    inputs = f"torch.rand({ROWS}, {CLASSES}), torch.randint(0, {CLASSES}, ({ROWS},))"
    paths = []
    for name, (forward, signature) in MODELS.items():
        paths.append(directory / f"{name}.py")
        paths[-1].write_text("import torch.nn.functional as F\n" + _model(forward, inputs, signature))
    results = capture_references(paths, timeout_s=60)
    for name, result in zip(MODELS, results, strict=True):
        assert isinstance(result, RefGraph), f"{name}: {result}"
    return dict(zip(MODELS, results, strict=True))


VALUES = [torch.linspace(-1.5, 2.0, ROWS * CLASSES).reshape(ROWS, CLASSES), torch.tensor([5, 0, 2, 2])]
DECLS = {f"input:{i}": z3.Function(f"In{i}", z3.BitVecSort(64), _sort(v.dtype)) for i, v in enumerate(VALUES)}
STATED = {"In1": (0, CLASSES - 1)}


def _value(graph: RefGraph, ranges: dict) -> float:
    (out,) = reference_outputs(graph, RefEnv(DECLS, {}, ranges))
    solver = z3.Solver()
    solver.check()
    overrides = {(DECLS[f"input:{i}"].name(), e): Fraction(x.item()) for i, v in enumerate(VALUES)
                 for e, x in enumerate(v.reshape(-1))}
    return float(Evaluator(solver.model(), overrides).value(out(z3.BitVecVal(0, 64))))


def test_cross_entropy_with_its_targets_range_matches_torch(graphs) -> None:
    expected = F.cross_entropy(VALUES[0].double(), VALUES[1]).item()
    assert _value(graphs["cross_entropy"], STATED) == pytest.approx(expected, rel=1e-12)


def test_cross_entropy_without_a_range_names_the_precondition(graphs) -> None:
    with pytest.raises(Unsupported, match=r"range = \[0, 5\]"):
        _value(graphs["cross_entropy"], {})


def test_a_sum_of_settled_tests_is_the_count(graphs) -> None:
    assert _value(graphs["counted"], STATED) == 2 * ROWS


def test_an_integer_sum_of_a_varying_summand_is_unsupported(graphs) -> None:
    with pytest.raises(Unsupported, match="varies"):
        _value(graphs["varying"], STATED)
