"""Convolution and pooling as comprehensions over a window (semantics/torch/windows.py).

The differential tests capture small models for real, expand every comprehension over its concrete bounds,
evaluate each output element exactly on random inputs and parameters, and compare with torch in float64:
every parameter (stride, padding, dilation, groups, transposed, output_padding, bias, ceil_mode,
count_include_pad, divisor_override) appears in some case. Hand-built one-op graphs cover the table entries
export does not produce and the variants that must be reported as not modelled.
"""

from __future__ import annotations

import json

import mpmath
import pytest
import torch
import z3

from semantics.comprehension import SUM, is_comprehension, sum_over
from semantics.terms import subterms
from semantics.torch.capture import RefGraph
from semantics.torch.ops import RefEnv, Unsupported, reference_outputs
from semantics.torch.windows import WINDOW_OPS
from tests.ref_graphs import capture_sources
from tests.test_torch_reductions import _direct_graph, _Evaluator, _instantiate, _model, _proved, _real_fn


class _WindowEvaluator(_Evaluator):
    """The reductions' exact evaluator, also reading a count converted to a real (avg pooling's divisor) and
    tests on indices (a padding's bounds), which z3 decides on the concrete index."""

    def _value(self, t: z3.ExprRef) -> object:
        if z3.is_app_of(t, z3.Z3_OP_BV2INT):
            return mpmath.mpf(self.index(t.arg(0)))
        if z3.is_bool(t) and all(z3.is_bv(c) for c in t.children()) and t.num_args():
            decided = z3.simplify(t)
            assert z3.is_true(decided) or z3.is_false(decided), f"test {t} is not concrete"
            return z3.is_true(decided)
        return super()._value(t)


# group: (signature, inputs, __init__ body, [(name, expression)])
DIFFERENTIAL = {
    "conv": ("x, z, v", "torch.randn(2, 4, 9), torch.randn(1, 4, 5, 5), torch.randn(1, 2, 3, 4, 3)",
             "self.c1 = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2); "
             "self.c1p = nn.Conv1d(4, 3, 3, bias=False); "
             "self.c2 = nn.Conv2d(4, 3, (2, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2)); "
             "self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False); "
             "self.dm = nn.Conv2d(4, 8, 3, stride=2, groups=4); self.pw = nn.Conv2d(4, 5, 1); "
             "self.c3 = nn.Conv3d(2, 2, (2, 1, 2), stride=(1, 2, 1), padding=(1, 0, 1)); "
             "self.c3s = nn.Conv3d(2, 1, 2, bias=False)", [
                 ("conv1d_strided_dilated_grouped", "self.c1(x)"), ("conv1d_plain", "self.c1p(x)"),
                 ("conv2d_asym", "self.c2(z)"), ("depthwise", "self.dw(z)"), ("depthwise_multiplier", "self.dm(z)"),
                 ("pointwise", "self.pw(z)"), ("conv3d_padded", "self.c3(v)"), ("conv3d_plain", "self.c3s(v)"),
             ]),
    "transposed": ("x, z, v", "torch.randn(2, 4, 4), torch.randn(1, 4, 3, 3), torch.randn(1, 2, 2, 3, 2)",
                   "self.t1 = nn.ConvTranspose1d(4, 2, 3, stride=3, padding=1, output_padding=2, dilation=2); "
                   "self.t1p = nn.ConvTranspose1d(4, 3, 2, bias=False); "
                   "self.t2 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, "
                   "bias=False); self.t2d = nn.ConvTranspose2d(4, 4, (3, 2), stride=(1, 2), groups=4); "
                   "self.t3 = nn.ConvTranspose3d(2, 3, (2, 2, 1), stride=(1, 2, 1), padding=(0, 1, 0))", [
                       ("transposed1d", "self.t1(x)"), ("transposed1d_plain", "self.t1p(x)"),
                       ("transposed2d_grouped", "self.t2(z)"), ("transposed2d_depthwise", "self.t2d(z)"),
                       ("transposed3d", "self.t3(v)"),
                   ]),
    "pool": ("x, z, v", "torch.randn(2, 3, 9), torch.randn(1, 2, 6, 7), torch.randn(1, 2, 5, 4, 5)", "pass", [
        ("max1d_ceil_padded", "F.max_pool1d(x, 3, 2, 1, ceil_mode=True)"),
        ("max1d_dilated", "F.max_pool1d(x, 2, 1, 1, dilation=3)"),
        ("max2d", "F.max_pool2d(z, (2, 3), (2, 1), (1, 1), dilation=(1, 2))"),
        ("max2d_ceil", "F.max_pool2d(z, 3, 2, ceil_mode=True)"), ("max3d", "F.max_pool3d(v, 2)"),
        ("max3d_padded", "F.max_pool3d(v, 3, 2, 1)"),
        ("avg1d_ceil_no_pad_count", "F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)"),
        ("avg1d_padded", "F.avg_pool1d(x, 3, 2, 1)"), ("avg2d", "F.avg_pool2d(z, 2)"),
        ("avg2d_ceil", "F.avg_pool2d(z, 3, 2, 1, ceil_mode=True)"),
        ("avg2d_no_pad_count", "F.avg_pool2d(z, 3, 1, 1, count_include_pad=False)"),
        ("avg3d_override", "F.avg_pool3d(v, 2, divisor_override=3)"),
        ("avg3d_no_pad_count", "F.avg_pool3d(v, 3, 2, 1, count_include_pad=False)"),
    ]),
    "pad": ("z", "torch.randn(1, 2, 5, 6)", "self.same = nn.Conv2d(2, 3, (2, 3), padding='same')", [
        ("conv_same_even_kernel", "self.same(z)"), ("pad_value", "F.pad(z, (1, 2, 0, 1), value=0.5)"),
        ("pad_leading_dims", "F.pad(z, (0, 0, 2, 0, 1, 1))"),
    ]),
}
DIFF_CASES = [(group, i, name) for group, (*_, exprs) in DIFFERENTIAL.items() for i, (name, _) in enumerate(exprs)]

STRUCTURE = {
    "conv1d": _model("self.conv(x)", "torch.randn(2, 4, 10)", init="self.conv = nn.Conv1d(4, 3, 3, bias=False)"),
    "reflect": _model("self.conv(x)", "torch.randn(1, 2, 6, 6)",
                      init="self.conv = nn.Conv2d(2, 2, 3, padding=1, padding_mode='reflect')"),
}


def _group_source(group: str) -> str:
    signature, inputs, init, exprs = DIFFERENTIAL[group]
    return _model("(" + ", ".join(expr for _, expr in exprs) + ")", inputs, signature, init)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, RefGraph]:
    directory = tmp_path_factory.mktemp("windows")
    sources = dict(STRUCTURE)
    sources.update({f"diff_{group}": _group_source(group) for group in DIFFERENTIAL})
    return capture_sources(directory, sources, 120)


@pytest.mark.parametrize("group, position, name", DIFF_CASES, ids=[c[2] for c in DIFF_CASES])
def test_matches_torch(graphs, group, position, name):
    graph = graphs[f"diff_{group}"]
    torch.manual_seed(0)
    values = [v.float() for v in eval(f"[{DIFFERENTIAL[group][1]}]", {"torch": torch})]
    model, expected = _instantiate(_group_source(group), values)
    state = model.state_dict()
    decls, tensors = {}, {}
    for i, v in enumerate(values):
        decls[f"input:{i}"], tensors[f"In{i}"] = _real_fn(f"In{i}"), v
    for k, key in enumerate(graph.params):
        decls[f"param:{key}"], tensors[f"P{k}"] = _real_fn(f"P{k}"), state[key]
    out = reference_outputs(graph, RefEnv(decls, {}))[position]
    evaluate = _WindowEvaluator(tensors)
    expected = expected[position].double().reshape(-1)
    with mpmath.workdps(40):
        for e in range(expected.numel()):
            got = evaluate(out(z3.BitVecVal(e, 64)))
            assert float(got) == pytest.approx(expected[e].item(), rel=1e-7, abs=1e-9), (name, e)


E, M = z3.BitVec("e", 64), z3.BitVec("m_expected", 64)


def test_convolution_is_one_sum_over_channels_then_taps(graphs):
    """Conv1d(4, 3, 3) on 2 x 4 x 10: y[b, oc, o] = Σ_{m < 12} x[b, m / 3, o + m % 3] * w[oc * 12 + m] (flat),
    the channel outermost (the flattened box the matcher meets a channel loop with an unrolled window in)."""
    x, w = _real_fn("X"), _real_fn("W")
    (term,) = [out(E) for out in reference_outputs(graphs["conv1d"], RefEnv({"input:0": x, "param:conv.weight": w},
                                                                             {}))]
    assert term.decl() == SUM
    b, oc, o = z3.UDiv(E, 24), z3.URem(z3.UDiv(E, 8), 3), z3.URem(E, 8)
    ic, k = z3.UDiv(M, 3), z3.URem(M, 3)
    expected = sum_over(0, 12, M, x(b * 40 + ic * 10 + o + k) * w(oc * 12 + M))
    assert _proved(term == expected, 48)
    wrong = sum_over(0, 12, M, x(b * 40 + ic * 10 + o + k) * w(oc * 12 + k * 4 + ic))   # taps outermost
    assert not _proved(term == wrong, 48)


@pytest.mark.parametrize("target, args, comprehension", [
    ("aten.max_pool1d_with_indices.default", {"self": "x", "kernel_size": [7], "stride": [1], "padding": [0],
                                              "dilation": [1], "ceil_mode": False}, False),
    ("aten.max_pool1d_with_indices.default", {"self": "x", "kernel_size": [8], "stride": [1], "padding": [0],
                                              "dilation": [1], "ceil_mode": False}, True),
    ("aten.convolution.default", {"input": "x", "weight": "w1", "bias": None, "stride": [1], "padding": [0],
                                  "dilation": [1], "transposed": False, "output_padding": [0], "groups": 3}, False),
])
def test_a_small_window_is_written_out(target, args, comprehension):
    """Below SMALL_WINDOW (8) taps the element is the terms themselves (what an unrolled kernel computes);
    from 8 on it is one comprehension."""
    values = _values()
    values["w1"] = values["w1"][:3, :1]       # 3 groups of 1 channel: 3 taps per output
    graph, inputs, _ = _direct_graph(target, args, values)
    decls = {f"input:{i}": _real_fn(f"In{i}") for i in range(len(inputs))}
    term = reference_outputs(graph, RefEnv(decls, {}))[0](z3.BitVecVal(5, 64))
    assert any(is_comprehension(t) for t in subterms(term)) is comprehension


def test_reflect_padding_is_not_modelled(graphs):
    decls = {"input:0": _real_fn("X"), "param:conv.weight": _real_fn("W"), "param:conv.bias": _real_fn("B")}
    with pytest.raises(Unsupported, match=r"aten\.index\.Tensor"):
        reference_outputs(graphs["reflect"], RefEnv(decls, {}))


# ---- hand-built graphs -------------------------------------------------------------------------------

def _values() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    shapes = {"x": (2, 3, 8), "w1": (4, 3, 3), "z": (1, 2, 5, 5), "w2": (2, 2, 2, 2), "b": (4,)}
    return {name: torch.randn(shape, generator=gen) for name, shape in shapes.items()}


DIRECT = [
    ("aten.max_pool1d_with_indices.default", {"self": "x", "kernel_size": [3], "stride": [2], "padding": [1],
                                              "dilation": [2], "ceil_mode": True}),
    ("aten.avg_pool1d.default", {"self": "x", "kernel_size": [3], "stride": [], "padding": [1], "ceil_mode": True,
                                 "count_include_pad": False}),
    ("aten.convolution.default", {"input": "x", "weight": "w1", "bias": "b", "stride": [1], "padding": [2],
                                  "dilation": [1], "transposed": False, "output_padding": [0], "groups": 1}),
    ("aten.convolution.default", {"input": "z", "weight": "w2", "bias": None, "stride": [2], "padding": [1],
                                  "dilation": [1], "transposed": True, "output_padding": [1], "groups": 1}),
]


def _evaluate_direct(target: str, args: dict) -> None:
    graph, inputs, expected = _direct_graph(target, args, _values())
    decls = {f"input:{i}": _real_fn(f"In{i}") for i in range(len(inputs))}
    outs = reference_outputs(graph, RefEnv(decls, {}))
    evaluate = _WindowEvaluator({f"In{i}": v for i, v in enumerate(inputs)})
    with mpmath.workdps(40):
        for out, want in zip(outs, expected, strict=True):
            want = want.double().reshape(-1)
            for e in range(want.numel()):
                got = evaluate(out(z3.BitVecVal(e, 64)))
                assert float(got) == pytest.approx(want[e].item(), rel=1e-7, abs=1e-9), (target, e)


@pytest.mark.parametrize("target, args", DIRECT, ids=[f"{d[0]}-{i}" for i, d in enumerate(DIRECT)])
def test_table_entry_matches_torch(target, args):
    _evaluate_direct(target, args)


def _edited(graph: RefGraph, name: str, value: object) -> RefGraph:
    """The graph with its op's argument `name` replaced (a graph capture would not produce)."""
    data = json.loads(graph.to_json())
    next(n for n in data["nodes"] if n["op"] == "call")["args"][name] = value
    return RefGraph.from_data(data)


def _unsupported(graph: RefGraph, message: str) -> None:
    decls = {f"input:{i}": _real_fn(f"In{i}") for i in range(len(graph.user_inputs))}
    with pytest.raises(Unsupported, match=message):
        reference_outputs(graph, RefEnv(decls, {}))


def test_output_padding_of_a_plain_convolution_is_not_modelled():
    args = {"input": "x", "weight": "w1", "bias": None, "stride": [1], "padding": [0], "dilation": [1],
            "transposed": False, "output_padding": [0], "groups": 1}
    graph, _, _ = _direct_graph("aten.convolution.default", args, _values())
    _unsupported(_edited(graph, "output_padding", [1]), "output_padding")


def test_a_window_with_no_input_position_is_not_modelled():
    args = {"self": "x", "kernel_size": [2], "stride": [1], "padding": [1], "dilation": [9], "ceil_mode": False}
    graph, _, _ = _direct_graph("aten.max_pool1d_with_indices.default", args, _values())
    _unsupported(graph, "no input position")


def test_a_shape_torch_did_not_compute_is_not_guessed():
    args = {"self": "x", "kernel_size": [3], "stride": [2], "padding": [0], "dilation": [1], "ceil_mode": False}
    graph, _, _ = _direct_graph("aten.max_pool1d_with_indices.default", args, _values())
    _unsupported(_edited(graph, "ceil_mode", True), "the parameters give shape")   # 4 positions, torch said 3
    graph, _, _ = _direct_graph("aten.convolution.default", {**DIRECT[2][1], "padding": [1]}, _values())
    _unsupported(_edited(graph, "dilation", [2]), "the parameters give shape")


def test_a_cropping_pad_is_not_modelled():
    graph, _, _ = _direct_graph("aten.constant_pad_nd.default", {"self": "x", "pad": [1, 1], "value": 0.0},
                                _values())
    _unsupported(_edited(graph, "pad", [-1, 1]), "constant padding")


def test_table_names_real_aten_overloads():
    for target in WINDOW_OPS:
        _, name, overload = target.split(".")
        assert getattr(getattr(torch.ops.aten, name), overload) is not None, target
