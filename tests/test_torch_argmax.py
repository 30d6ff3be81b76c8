"""torch.argmax / argmin as arg-extremum folds (semantics/torch/arg_reductions.py), checked against torch.

Inputs with many ties (small integers as floats), so that the first index on ties is what is tested; every
output element is evaluated by the replay's exact evaluator (`semantics.replay`) and compared with torch."""

from __future__ import annotations

import textwrap

import pytest
import torch
import z3

from semantics.arg_extrema import kind_of
from semantics.replay import Evaluator
from semantics.torch.ops import RefEnv, reference_outputs
from tests.ref_graphs import capture_sources

EXPRESSIONS = ["x.argmax(dim=1)", "x.argmin(dim=-1, keepdim=True)", "x.argmax(0)", "z.argmin(dim=1)",
               "v.argmax()", "x[:1].argmin()", "torch.argmax(z, dim=2, keepdim=True)"]
SOURCE = textwrap.dedent(f"""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x, z, v):
            return ({", ".join(EXPRESSIONS)})

    def get_inputs():
        return [torch.randn(4, 6), torch.randn(2, 5, 3), torch.randn(7)]

    def get_init_inputs():
        return []
    """)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    return capture_sources(tmp_path_factory.mktemp("argmax"), {"argmax": SOURCE}, 60)["argmax"]


def test_argmax_and_argmin_match_torch_with_ties(graph):
    gen = torch.Generator().manual_seed(3)
    inputs = [torch.randint(0, 3, shape, generator=gen).float() for shape in ((4, 6), (2, 5, 3), (7,))]
    names = [f"In{i}" for i in range(len(inputs))]
    decls = {f"input:{i}": z3.Function(n, z3.BitVecSort(64), z3.RealSort()) for i, n in enumerate(names)}
    outs = reference_outputs(graph, RefEnv(decls, {}))
    x, z, v = inputs
    wanted = [eval(e, {"torch": torch, "x": x, "z": z, "v": v}).reshape(-1) for e in EXPRESSIONS]
    overrides = {(n, i): int(value) for n, t in zip(names, inputs, strict=True)
                 for i, value in enumerate(t.reshape(-1).tolist())}
    solver = z3.Solver()
    assert solver.check() == z3.sat
    folds = 0
    for out, want, text in zip(outs, wanted, EXPRESSIONS, strict=True):
        for e in range(want.numel()):
            term = out(z3.BitVecVal(e, 64))
            folds += kind_of(term) is not None
            assert Evaluator(solver.model(), dict(overrides)).value(term) == want[e].item(), (text, e)
    assert folds > 0
