"""ATen semantics: z3 proofs of the terms the op table gives, and a differential check against torch.

Every reference here is captured for real (one worker call for all of them, a module fixture). The
proofs pin the exact form the kernel side relies on (index arithmetic, If conventions, float32
constants). The differential check runs each model in this process with float64 torch on concrete
inputs and compares every output element with its term, evaluated with the ideal functions' true
meaning (mpmath) — it catches a wrong sign, constant, index or broadcast in any table entry.
"""

from __future__ import annotations

import math
import struct
import textwrap
from fractions import Fraction

import mpmath
import pytest
import torch
import z3

from semantics.axioms import IDEAL_FUNCTIONS, ideal
from semantics.torch.capture import RefGraph, capture_references
from semantics.torch.ops import RefEnv, Unsupported, reference_outputs

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _model(forward: str, inputs: str, signature: str = "x") -> str:
    return HEADER + textwrap.dedent(f"""
        class Model(nn.Module):
            def forward(self, {signature}):
                return {forward}

        def get_inputs():
            return [{inputs}]

        def get_init_inputs():
            return []
        """)


PROOF_MODELS = {
    "transpose": _model("x.t().contiguous()", "torch.randn(300, 500)"),
    "relu": _model("torch.relu(x)", "torch.randn(1024, 4096)"),
    "broadcast": _model("a + b", "torch.randn(4, 1), torch.randn(1, 5)", "a, b"),
    "gelu": _model("F.gelu(x)", "torch.randn(64, 64)"),
    "gelu_tanh": _model("F.gelu(x, approximate='tanh')", "torch.randn(64, 64)"),
    "silu": _model("F.silu(x)", "torch.randn(64, 64)"),
    "scalar": _model("x * s + 1.0", "torch.randn(7, 9), 0.1", "x, s"),
    "leaky": _model("F.leaky_relu(x, 0.01)", "torch.randn(128)"),
    "views": _model("x.view(-1).reshape(4, 6, 5).unsqueeze(0).squeeze(0).flatten()", "torch.randn(24, 5)"),
    "sort": _model("torch.sort(x, dim=-1).values", "torch.randn(4, 4)"),
    "logcumsumexp": _model("torch.logcumsumexp(x, dim=1)", "torch.randn(4, 4)"),
    "argmax": _model("x.argmax()", "torch.randn(4, 4)"),   # over all dims: a flattened index
    "max_indices": _model("torch.max(x, dim=1).indices", "torch.randn(4, 4)"),
    "int_sum": _model("x.sum(dim=1)", "torch.randint(0, 5, (4, 4))"),
    "constant": _model("x + torch.tensor(2.0)", "torch.randn(4)"),
    "to_int": _model("x.to(torch.int32)", "torch.randn(4)"),
    "bool_mask": _model("x * m", "torch.randn(8), torch.randint(0, 2, (8,)).bool()", "x, m"),
    "bn_train": HEADER + textwrap.dedent("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(3)

            def forward(self, x):
                return self.bn(x)

        def get_inputs():
            return [torch.randn(4, 3)]

        def get_init_inputs():
            return []
        """),
}
PROOF_MODELS["bn_eval"] = PROOF_MODELS["bn_train"].replace("self.bn = nn.BatchNorm1d(3)",
                                                           "self.bn = nn.BatchNorm1d(3).eval()")

# (name, forward expression) over x: f32 (2, 3), y: f32 (3,), n: int32 (2, 3), s: float scalar,
# z: f32 (4, 6, 5), k: int scalar.
DIFFERENTIAL = [
    ("relu", "F.relu(x)"), ("leaky_relu", "F.leaky_relu(x, 0.2)"), ("hardtanh", "F.hardtanh(x, -0.5, 0.7)"),
    ("relu6", "F.relu6(x * 4)"), ("clamp", "torch.clamp(x, min=-0.5, max=0.7)"),
    ("clamp_min", "torch.clamp(x, min=0.1)"), ("clamp_max", "x.clamp_max(0.1)"),
    ("clamp_tensor", "torch.clamp(x, min=y)"),
    ("sigmoid", "torch.sigmoid(x)"), ("silu", "F.silu(x)"), ("tanh", "torch.tanh(x)"),
    ("gelu", "F.gelu(x)"), ("gelu_tanh", "F.gelu(x, approximate='tanh')"), ("elu", "F.elu(x, 0.5)"),
    ("selu", "F.selu(x)"), ("celu", "F.celu(x, 2.0)"), ("softplus", "F.softplus(x)"), ("mish", "F.mish(x)"),
    ("hardsigmoid", "F.hardsigmoid(x * 3)"), ("hardswish", "F.hardswish(x * 3)"),
    ("exp_log", "torch.exp(x) + torch.log(x.abs() + 0.5)"), ("log1p_expm1", "torch.log1p(x.abs()) + torch.expm1(x)"),
    ("erf", "torch.erf(x)"), ("abs_neg", "x.abs() - (-x) * 3"),
    ("pow", "x ** 2 + x.pow(3) + (x.abs() + 1) ** -1 + (x.abs() + 1) ** 0.5 + x ** 0"),
    ("sqrt", "torch.sqrt(x.abs() + 1) + torch.rsqrt(x.abs() + 1) + torch.reciprocal(x) + torch.square(x)"),
    ("arith", "(x + y * 2) - (y - x) / 3 + torch.add(x, y, alpha=2) - torch.sub(x, y, alpha=0.5)"),
    ("rsub", "1 - x + torch.rsub(x, y, alpha=3)"), ("div_scalar", "x / 7 + 7 / (x.abs() + 1)"),
    ("where", "torch.where(x > 0, x, 0.5 * y)"), ("max_min", "torch.maximum(x, y) + torch.minimum(x, y)"),
    ("compare", "(x > y).float() + (x <= 0.1).float() * 2 + (x == x).float() + (y != 1).float()"),
    ("logic", "(~(x > 0) | (y < 0) & (x < 1) ^ (x > y)).float() + torch.logical_and(x > 0, ~(y > 0)).float()"
              " + torch.logical_or(x > 1, torch.logical_not(y > 0)).float()"),
    ("scalars", "x * s + k - s / (x.abs() + 1)"),
    ("ints", "(n * 3 - 1).float() / 2 + (n > 1).float() + n.abs().float() + torch.where(n > 1, x, y)"),
    ("int_scalar", "(n + k).to(torch.float64) * 0.5"),
    ("casts", "n.to(torch.float16).float() + x.double().float() + (x > 0).to(torch.int32)"),
    ("layout", "z.permute(2, 0, 1).reshape(30, 4).t().contiguous().reshape(4, 5, 6).transpose(0, 2)"),
    ("slicing", "torch.cat([z[1:3, ::2, 1], z[:, 5, -3:], z[0, 1:4, 1:4]], dim=0)"),
    ("expand", "x.unsqueeze(0).expand(4, 2, 3) * z[:, :2, :3] + y"),
    ("full", "x + torch.zeros(2, 3, device=x.device) + torch.full((3,), 0.25, device=x.device)"),
    ("triu_tril", "torch.triu(z[0])[:2, :3] + torch.tril(z[1], -1)[:2, :3] + torch.triu(x, 1)"),
    ("arange", "x + torch.arange(3, device=x.device) * 2 - torch.arange(1, 7, 2, device=x.device)"),
    ("isnan", "torch.where(torch.isnan(x), torch.full_like(x, float('nan')), x * 2) + torch.isnan(n).float()"),
]
DIFF_SIGNATURE = "x, y, n, s, z, k"
DIFF_INPUTS = ("torch.randn(2, 3), torch.randn(3), torch.randint(-3, 3, (2, 3), dtype=torch.int32), 0.75, "
               "torch.randn(4, 6, 5), 3")


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, RefGraph]:
    directory = tmp_path_factory.mktemp("ops")
    sources = dict(PROOF_MODELS)
    sources.update({f"diff_{name}": _model(expr, DIFF_INPUTS, DIFF_SIGNATURE) for name, expr in DIFFERENTIAL})
    paths = []
    for name, text in sources.items():
        paths.append(directory / f"{name}.py")
        paths[-1].write_text(text)
    results = capture_references(paths, timeout_s=60)
    for name, result in zip(sources, results, strict=True):
        assert isinstance(result, RefGraph), f"{name}: {result}"
    return dict(zip(sources, results, strict=True))


E = z3.BitVec("e", 64)


def _real_fn(name: str) -> z3.FuncDeclRef:
    return z3.Function(name, z3.BitVecSort(64), z3.RealSort())


def _f32(x: float) -> z3.ExprRef:
    return z3.RealVal(Fraction(struct.unpack("<f", struct.pack("<f", x))[0]))


def _proved(claim: z3.ExprRef, numel: int) -> bool:
    solver = z3.Solver()
    solver.add(z3.ULT(E, numel), z3.Not(claim))
    return solver.check() == z3.unsat


def _one_output(graph: RefGraph, env: RefEnv) -> z3.ExprRef:
    (out,) = reference_outputs(graph, env)
    return out(E)


def test_transpose_indexing(graphs):
    x = _real_fn("X")
    term = _one_output(graphs["transpose"], RefEnv({"input:0": x}, {}))
    assert _proved(term == x(z3.URem(E, 300) * 500 + z3.UDiv(E, 300)), 150000)


def test_relu(graphs):
    x = _real_fn("X")
    term = _one_output(graphs["relu"], RefEnv({"input:0": x}, {}))
    assert z3.eq(term, z3.If(x(E) >= 0, x(E), 0))        # contiguous input: X(e), no index arithmetic
    assert _proved(term == z3.If(x(E) >= 0, x(E), 0), 1024 * 4096)


def test_broadcast_add(graphs):
    a, b = _real_fn("A"), _real_fn("B")
    term = _one_output(graphs["broadcast"], RefEnv({"input:0": a, "input:1": b}, {}))
    assert _proved(term == a(z3.UDiv(E, 5)) + b(z3.URem(E, 5)), 20)


def test_gelu_exact_and_tanh(graphs):
    x = _real_fn("X")
    term = _one_output(graphs["gelu"], RefEnv({"input:0": x}, {}))
    c = _f32(1 / math.sqrt(2))
    assert _proved(term == 0.5 * x(E) * (1 + ideal("erf")(x(E) * c)), 4096)
    term = _one_output(graphs["gelu_tanh"], RefEnv({"input:0": x}, {}))
    inner = _f32(math.sqrt(2 / math.pi)) * (x(E) + _f32(0.044715) * (x(E) * x(E) * x(E)))
    assert _proved(term == 0.5 * x(E) * (1 + ideal("tanh")(inner)), 4096)


def test_silu(graphs):
    x = _real_fn("X")
    term = _one_output(graphs["silu"], RefEnv({"input:0": x}, {}))
    assert _proved(term == x(E) * (1 / (1 + ideal("exp")(-x(E)))), 4096)


def test_bool_input_is_its_storage_byte_read_as_nonzero(graphs):
    """A kernel sees a bool tensor as one byte per element; the reference reads that byte as byte ≠ 0."""
    x, m = _real_fn("X"), z3.Function("M", z3.BitVecSort(64), z3.BitVecSort(8))
    term = _one_output(graphs["bool_mask"], RefEnv({"input:0": x, "input:1": m}, {}))
    assert _proved(term == z3.If(m(E) != 0, x(E), 0), 8)
    assert not _proved(term == z3.If(m(E) == 1, x(E), 0), 8)


def test_scalar_input_is_symbolic(graphs):
    x, s = _real_fn("X"), z3.Real("s")
    term = _one_output(graphs["scalar"], RefEnv({"input:0": x}, {1: s}))
    assert _proved(term == x(E) * s + 1, 63)
    assert not _proved(term == x(E) * _f32(0.1) + 1, 63)


def test_leaky_relu_slope_is_the_float32_value(graphs):
    x = _real_fn("X")
    term = _one_output(graphs["leaky"], RefEnv({"input:0": x}, {}))
    assert _proved(term == z3.If(x(E) >= 0, x(E), x(E) * _f32(0.01)), 128)
    assert not _proved(term == z3.If(x(E) >= 0, x(E), x(E) * z3.RealVal(Fraction(1, 100))), 128)


def test_view_chain_folds_back_to_the_flat_index(graphs):
    x = _real_fn("X")
    term = _one_output(graphs["views"], RefEnv({"input:0": x}, {}))
    assert z3.eq(term, x(E))


@pytest.mark.parametrize("name, op", [
    ("sort", "aten.sort.default"), ("logcumsumexp", "aten.logcumsumexp.default"), ("argmax", "aten.argmax.default"),
    ("max_indices", "aten.max.dim: the indices result"), ("int_sum", "aten.sum.dim_IntList with result dtype int64"),
    ("constant", "tensor constant"), ("to_int", "conversion from float32 to int32"),
])
def test_unsupported_names_the_op(graphs, name, op):
    dtype = graphs[name].user_inputs[0].dtype
    x = _real_fn("X") if dtype.startswith("float") else z3.Function("N", z3.BitVecSort(64), z3.BitVecSort(64))
    with pytest.raises(Unsupported, match=op.replace(".", r"\.")):
        reference_outputs(graphs[name], RefEnv({"input:0": x}, {}))


def test_env_must_match_dtypes(graphs):
    wrong = z3.Function("W", z3.BitVecSort(64), z3.BitVecSort(32))
    with pytest.raises(TypeError, match="Real"):
        reference_outputs(graphs["relu"], RefEnv({"input:0": wrong}, {}))
    with pytest.raises(KeyError, match="input:0"):
        reference_outputs(graphs["relu"], RefEnv({}, {}))


# ---- differential check against torch ----------------------------------------------------------------

def _inputs() -> list:
    gen = torch.Generator().manual_seed(0)
    x = torch.tensor([[-1.75, -0.3, 0.25], [0.9, 2.2, -2.9]])
    y = torch.tensor([0.6, -1.1, 1.0])
    n = torch.tensor([[-3, 0, 2], [1, 5, -1]], dtype=torch.int32)
    z = torch.randn(4, 6, 5, generator=gen).to(torch.float32)
    return [x, y, n, 0.75, z, 3]


def _evaluate(term: z3.ExprRef, tensors: dict[str, torch.Tensor], decls: dict[str, z3.FuncDeclRef]):
    """The value of a closed term: inputs replaced by their (exact) values, ideal functions by mpmath."""
    by_name = {decls[key].name(): tensors[key].reshape(-1) for key in decls}
    term = z3.simplify(term)
    subs, stack = [], [term]
    while stack:
        t = stack.pop()
        if z3.is_app(t) and t.decl().name() in by_name and t.num_args() == 1:
            value = by_name[t.decl().name()][z3.simplify(t.arg(0)).as_long()].item()
            sort = t.sort()
            subs.append((t, z3.BitVecVal(value, sort.size()) if z3.is_bv_sort(sort) else
                         z3.RealVal(Fraction(value))))
        elif z3.is_app(t):
            stack.extend(t.children())
    return _number(z3.simplify(z3.substitute(term, *subs)) if subs else term)


_OPS = {  # z3 operator kind -> its meaning on numbers; If is lazy (a dead branch may divide by zero)
    z3.Z3_OP_ADD: lambda *a: sum(a[1:], a[0]), z3.Z3_OP_MUL: lambda *a: math.prod(a[1:], start=a[0]),
    z3.Z3_OP_SUB: lambda a, *b: a - sum(b), z3.Z3_OP_UMINUS: lambda a: -a, z3.Z3_OP_DIV: lambda a, b: a / b,
    z3.Z3_OP_POWER: lambda a, b: a ** b, z3.Z3_OP_LE: lambda a, b: a <= b, z3.Z3_OP_LT: lambda a, b: a < b,
    z3.Z3_OP_GE: lambda a, b: a >= b, z3.Z3_OP_GT: lambda a, b: a > b, z3.Z3_OP_EQ: lambda a, b: a == b,
    z3.Z3_OP_NOT: lambda a: not a, z3.Z3_OP_AND: lambda *a: all(a), z3.Z3_OP_OR: lambda *a: any(a),
}


def _number(t: z3.ExprRef):
    if z3.is_rational_value(t):
        return mpmath.mpf(t.numerator_as_long()) / t.denominator_as_long()
    if z3.is_bv_value(t):
        return t.as_signed_long()
    if z3.is_true(t) or z3.is_false(t):
        return z3.is_true(t)
    name = t.decl().name()
    if z3.is_app_of(t, z3.Z3_OP_ITE):
        return _number(t.arg(1) if _number(t.arg(0)) else t.arg(2))
    if name in IDEAL_FUNCTIONS:
        return IDEAL_FUNCTIONS[name].exact(_number(t.arg(0)))
    return _OPS[t.decl().kind()](*(_number(c) for c in t.children()))


def _assert_matches(graph: RefGraph, expected: torch.Tensor, values: list, scalars: dict[int, z3.ExprRef],
                    what: str) -> None:
    """Every output element's term, evaluated exactly, equals torch's float64 result."""
    decls = {f"input:{i}": z3.Function(f"In{i}", z3.BitVecSort(64), _sort(v.dtype))
             for i, v in enumerate(values) if isinstance(v, torch.Tensor)}
    tensors = {f"input:{i}": v for i, v in enumerate(values) if isinstance(v, torch.Tensor)}
    (out,) = reference_outputs(graph, RefEnv(decls, scalars))
    expected = expected.double().reshape(-1)
    with mpmath.workdps(40):
        for e in range(expected.numel()):
            got = _evaluate(out(z3.BitVecVal(e, 64)), tensors, decls)
            assert float(got) == pytest.approx(expected[e].item(), rel=1e-6, abs=1e-6), (what, e)


def _sort(dtype: torch.dtype) -> z3.SortRef:
    return z3.RealSort() if dtype.is_floating_point else z3.BitVecSort(torch.iinfo(dtype).bits)


@pytest.mark.parametrize("name, expr", DIFFERENTIAL, ids=[d[0] for d in DIFFERENTIAL])
def test_matches_torch(graphs, name, expr):
    namespace: dict = {}
    exec(_model(expr, DIFF_INPUTS, DIFF_SIGNATURE), namespace)
    values = _inputs()
    wide = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]
    expected = namespace["Model"]()(*wide)
    _assert_matches(graphs[f"diff_{name}"], expected, values,
                    {3: z3.RealVal(Fraction(0.75)), 5: z3.BitVecVal(3, 64)}, name)


# ---- table entries core-ATen decomposition does not produce today, checked on hand-built graphs -------

DIRECT_INPUTS = {"x": (2, 3), "y": (3,), "n": (2, 3), "z": (4, 6, 5), "w": (2, 1, 3)}
DIRECT = [
    ("aten.t.default", {"self": "x"}),
    ("aten.transpose.int", {"self": "z", "dim0": 0, "dim1": -1}),
    ("aten.reshape.default", {"self": "z", "shape": [6, -1]}),
    ("aten._unsafe_view.default", {"self": "z", "size": [20, 6]}),
    ("aten.flatten.using_ints", {"self": "z", "start_dim": 1, "end_dim": 2}),
    ("aten.squeeze.default", {"self": "w"}),
    ("aten.squeeze.dim", {"self": "w", "dim": 1}),
    ("aten.alias.default", {"self": "x"}),
    ("aten.copy.default", {"self": "x", "src": "y", "non_blocking": False}),
    ("aten.add.Scalar", {"self": "x", "other": 2.5, "alpha": 2}),
    ("aten.sub.Scalar", {"self": "x", "other": 2.5, "alpha": 2}),
    ("aten.mul.Scalar", {"self": "x", "other": 0.3}),
    ("aten.div.Scalar", {"self": "x", "other": 0.3}),
    ("aten.div.Tensor_mode", {"self": "x", "other": "y", "rounding_mode": None}),
    ("aten.rsub.Scalar", {"self": "x", "other": 2.0, "alpha": 3}),
    ("aten.rsub.Tensor", {"self": "x", "other": "y", "alpha": 2}),
    ("aten.clamp_min.default", {"self": "x", "min": 0.1}),
    ("aten.clamp_max.default", {"self": "x", "max": 0.1}),
    ("aten.eq.Scalar", {"self": "n", "other": 2}),
    ("aten.ge.Scalar", {"self": "x", "other": 0.25}),
    ("aten.ge.Tensor", {"self": "x", "other": "y"}),
    ("aten.le.Tensor", {"self": "x", "other": "y"}),
    ("aten.lt.Tensor", {"self": "n", "other": "x"}),
    ("aten.ne.Tensor", {"self": "x", "other": "y"}),
    ("aten.scalar_tensor.default", {"s": 1.5, "dtype": torch.float32}),
    ("aten.silu.default", {"self": "x"}),
    ("aten.square.default", {"self": "n"}),
    ("aten.bitwise_not.default", {"self": "n"}),
    ("aten.bitwise_and.Tensor", {"self": "n", "other": "n"}),
    ("aten.bitwise_xor.Tensor", {"self": "n", "other": "n"}),
]


def _direct_values() -> dict[str, torch.Tensor]:
    values = {name: torch.linspace(-2.1, 1.9, math.prod(shape)).reshape(shape).to(torch.float32)
              for name, shape in DIRECT_INPUTS.items()}
    values["n"] = torch.tensor([[-3, 0, 2], [1, 5, -1]], dtype=torch.int32)
    return values


def _direct_graph(target: str, args: dict, values: dict[str, torch.Tensor]) -> tuple[RefGraph, torch.Tensor]:
    """A one-op graph in capture's format, and torch's result of the op (float64 for float inputs)."""
    op = torch.ops.aten
    for part in target.split(".")[1:]:
        op = getattr(op, part)
    torch_args = {k: values[v] if isinstance(v, str) and v in values else v for k, v in args.items()}
    result = op(**torch_args)
    wide = {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in torch_args.items()}
    expected = op(**wide) if result.is_floating_point() or "dtype" not in args else result

    def encode(v):
        if isinstance(v, str) and v in values:
            return {"node": v}
        if isinstance(v, float):
            return {"float": v.hex()}
        return {"dtype": str(v).removeprefix("torch.")} if isinstance(v, torch.dtype) else v

    def spec(t: torch.Tensor) -> dict:
        return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}

    nodes = [{"op": "placeholder", "name": n, "input": i, "out": spec(values[n])} for i, n in enumerate(values)]
    nodes.append({"op": "call", "name": "r", "target": target, "args": {k: encode(v) for k, v in args.items()},
                  "out": spec(result)})
    nodes.append({"op": "output", "name": "output", "args": [{"node": "r"}]})
    graph = RefGraph.from_data({"user_inputs": [spec(v) for v in values.values()], "params": {},
                                "outputs": [spec(result)], "nodes": nodes})
    return graph, expected


@pytest.mark.parametrize("target, args", DIRECT, ids=[d[0] for d in DIRECT])
def test_table_entry_matches_torch(target, args):
    values = _direct_values()
    graph, expected = _direct_graph(target, args, values)
    _assert_matches(graph, expected, list(values.values()), {}, target)


def test_div_with_rounding_is_unsupported():
    values = _direct_values()
    graph, _ = _direct_graph("aten.div.Tensor_mode", {"self": "x", "other": "y", "rounding_mode": "floor"},
                             values)
    with pytest.raises(Unsupported, match="rounding_mode='floor'"):
        reference_outputs(graph, RefEnv({f"input:{i}": _real_fn(f"I{i}") for i in range(5)}, {}))


def _bn_env(graph: RefGraph, bound: tuple[str, ...]) -> RefEnv:
    tensors = {"input:0": _real_fn("X")}
    tensors.update({f"param:bn.{name}": _real_fn(name.upper()) for name in bound})
    return RefEnv(tensors, {})


def test_batch_norm_in_training_reads_no_running_statistics(graphs):
    """The running statistics are inputs of the op even in training, where only their update reads them:
    left unbound they are no error, and the output is the batch-statistics one."""
    graph = graphs["bn_train"]
    out = _one_output(graph, _bn_env(graph, ("weight", "bias")))
    assert "RUNNING" not in str(out) and "WEIGHT" in str(out)


def test_batch_norm_in_eval_uses_the_bound_running_statistics(graphs):
    graph = graphs["bn_eval"]
    with pytest.raises(Unsupported, match="bn.running_mean"):
        _one_output(graph, _bn_env(graph, ("weight", "bias")))
    x, rm, rv, w, b = (_real_fn(n) for n in ("X", "RUNNING_MEAN", "RUNNING_VAR", "WEIGHT", "BIAS"))
    out = _one_output(graph, _bn_env(graph, ("weight", "bias", "running_mean", "running_var")))
    c = z3.URem(E, 3)
    want = (x(E) - rm(c)) * (1 / ideal("sqrt")(rv(c) + _f32(1e-5))) * w(c) + b(c)
    assert _proved(out == want, 12)
