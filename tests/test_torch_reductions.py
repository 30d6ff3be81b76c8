"""ATen reductions, contractions, scans and normalizations as comprehensions (semantics/torch/reductions.py).

Every model is captured for real (one worker call, a module fixture). The structure tests prove with z3
that an output element is the expected `Sum`/`Prod`/`MaxFrom` term, the expected term written with bound
variables of other names, so that the check is extensional (the lambdas are equal arrays), not syntactic.
The differential tests expand every comprehension over its concrete bounds, evaluate the term exactly
(ideal functions by mpmath) on concrete inputs and parameters, and compare with torch in float64.
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
from semantics.comprehension import MAX_FROM, MIN_FROM, PROD, SUM, is_comprehension, max_over, prod_over, sum_over
from semantics.torch.capture import RefGraph
from semantics.torch.ops import RefEnv, Unsupported, reference_outputs
from semantics.torch.reductions import REDUCTION_OPS
from tests.ref_graphs import capture_sources

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _model(forward: str, inputs: str, signature: str = "x", init: str = "pass") -> str:
    return HEADER + textwrap.dedent(f"""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                {init}

            def forward(self, {signature}):
                return {forward}

        def get_inputs():
            return [{inputs}]

        def get_init_inputs():
            return []
        """)


# Models whose outputs have their structure proved: several outputs per model (one capture each).
STRUCTURE = {
    "x45": _model("(x.sum(dim=1), torch.max(x, dim=1).values, x.amax(-1), x.mean(dim=(1,)), F.softmax(x, dim=-1), "
                  "x.var(dim=1, unbiased=False), x.var(dim=1, unbiased=True), torch.cumsum(x, dim=1), "
                  "torch.cumprod(x, dim=1))",
                  "torch.randn(4, 5)"),
    "sum_keep": _model("x.sum(dim=(0, -1), keepdim=True)", "torch.randn(3, 4, 5)"),
    "products": _model("(a @ b, c @ d, torch.bmm(p, q))", "torch.randn(4, 3), torch.randn(3, 5), torch.randn(4, 3), "
                       "torch.randn(3, 1), torch.randn(2, 4, 3), torch.randn(2, 3, 5)", "a, b, c, d, p, q"),
    "params": _model("(self.fc(x), self.ln(y))", "torch.randn(4, 3), torch.randn(4, 5)", "x, y",
                     "self.fc = nn.Linear(3, 5); self.ln = nn.LayerNorm(5)"),
    # unsupported: each alone, since one unmodelled node makes the whole reference unsupported
    "max_both": _model("torch.max(x, dim=1).values + torch.max(x, dim=1).indices", "torch.randn(4, 5)"),
    "logcumsumexp": _model("torch.logcumsumexp(x, dim=1)", "torch.randn(4, 5)"),
    "prod": _model("x.prod(dim=1)", "torch.randn(4, 5)"),
    "argmin_flat": _model("x.argmin()", "torch.randn(4, 5)"),
    "int_sum": _model("x.sum(dim=1)", "torch.randint(0, 5, (4, 5))"),
}
X45 = ["sum", "max_values", "amax", "mean", "softmax", "var_biased", "var_unbiased", "cumsum", "cumprod"]

# Differential groups: (signature, inputs, __init__ body, [(name, expression)]); one model per group
# returning every expression, inputs tiny since every output element is checked.
DIFFERENTIAL = {
    "x": ("x", "torch.randn(3, 4)", "pass", [
        ("sum", "x.sum(dim=1)"), ("sum_all", "x.sum()"), ("sum_f64", "x.sum(dim=0, dtype=torch.float64)"),
        ("mean", "x.mean(dim=(1,))"), ("mean_all", "x.mean()"), ("amax", "x.amax(-1)"),
        ("max_values", "torch.max(x, dim=1).values"), ("max_min_all", "torch.max(x) - x.min()"),
        ("var_biased", "x.var(dim=1, unbiased=False)"), ("var_unbiased", "x.var(dim=1, unbiased=True)"),
        ("var_all", "x.var()"), ("var_mean", "torch.var_mean(x, dim=1)[0] + torch.var_mean(x, dim=1, correction=0)[1]"),
        ("l2_normalize", "x / x.norm(dim=1, keepdim=True)"), ("frobenius", "x / torch.norm(x, p='fro')"),
        ("l1_linf", "torch.linalg.vector_norm(x, ord=1, dim=1) + torch.linalg.vector_norm(x, ord=float('inf'))"),
        ("softmax", "F.softmax(x, dim=-1)"), ("log_softmax", "F.log_softmax(x, dim=1)"),
        ("softmin", "F.softmin(x, dim=1)"), ("logsumexp", "torch.logsumexp(x, dim=1)"),
        ("rms_by_hand", "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)"),
        ("cumsum", "torch.cumsum(x, dim=1)"), ("cumsum_reverse", "torch.cumsum(x.flip(1), dim=1).flip(1)"),
        ("cumprod", "torch.cumprod(x, dim=1)"), ("cumprod_f64", "torch.cumprod(x, dim=0, dtype=torch.float64)"),
        ("any_all", "(x > 0.5).any(dim=1).float() + (x < 2).all(dim=0).float().sum()"),
        ("nested_softmax", "(torch.softmax(x, -1) * x).sum(-1) + torch.softmax(x, 1).var(1)"),
    ]),
    "z": ("z", "torch.randn(2, 3, 4)", "pass", [
        ("sum_keep_neg", "z.sum(dim=(0, -1), keepdim=True)"), ("mean_keep2", "z.mean(dim=(1, 2), keepdim=True)"),
        ("amin_multi", "z.amin(dim=(0, 2))"), ("min_values_keep", "torch.min(z, dim=-1, keepdim=True)[0]"),
        ("std_multi", "z.std(dim=(0, 2), keepdim=True)"), ("softmax_dim0", "torch.softmax(z, dim=0)"),
        ("layer_norm_2d", "F.layer_norm(z, (3, 4))"), ("cumsum_masked", "torch.cumsum(z * (z > 0), dim=-1)"),
        ("cumprod_middle", "torch.cumprod(z, dim=1)"), ("cumprod_last_plus_1", "torch.cumprod(z + 1, dim=-1)"),
    ]),
    "products": ("a, b, c, p, q, r, s, t", "torch.randn(3, 4), torch.randn(4, 2), torch.randn(3, 4), "
                 "torch.randn(2, 3, 4), torch.randn(2, 4, 2), torch.randn(2, 1, 2, 3), torch.randn(2, 3, 2), "
                 "torch.randn(1, 2, 3, 16)", "pass", [
        ("mm", "a @ b"), ("matvec", "a @ b[:, :1]"), ("matvec_1d", "a @ b[:, 0]"), ("outer", "a[:, :1] @ b[:1]"),
        ("bmm", "torch.bmm(p, q)"), ("matmul_bcast", "torch.matmul(r, s)"), ("mm_t", "a.t() @ c"),
        ("einsum", "torch.einsum('ik,kj->ij', a, b)"), ("nested_matmul", "torch.softmax(a @ b, -1) @ b.t()"),
        ("attention", "F.scaled_dot_product_attention(t, t * 0.5, t + 1)"),
        ("mse", "torch.mean((a - c) ** 2)"), ("cosine_loss", "torch.mean(1 - F.cosine_similarity(a, c, dim=1))"),
        ("hinge", "torch.mean(torch.clamp(1 - a * c, min=0))"),
    ]),
    "params": ("x, z, w, g", "torch.randn(3, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 2, 2), torch.randn(2, 4, 3)",
               "self.fc = nn.Linear(4, 3); self.fc_nb = nn.Linear(4, 2, bias=False); self.ln = nn.LayerNorm(4); "
               "self.rms = nn.RMSNorm(4, eps=1e-6); self.bn1 = nn.BatchNorm1d(4); self.bn2 = nn.BatchNorm2d(3); "
               "self.inorm = nn.InstanceNorm2d(3); self.gn = nn.GroupNorm(2, 4); self.gn1 = nn.GroupNorm(1, 4); "
               "self.gnc = nn.GroupNorm(4, 4)", [
        ("linear", "self.fc(x)"), ("linear_3d", "self.fc(z)"), ("linear_no_bias", "self.fc_nb(x)"),
        ("layer_norm", "self.ln(x)"), ("rms_norm", "self.rms(z)"), ("batch_norm_1d", "self.bn1(x)"),
        ("batch_norm_2d", "self.bn2(w)"), ("instance_norm", "self.inorm(w)"), ("group_norm", "self.gn(g)"),
        ("group_norm_1", "self.gn1(g)"), ("group_norm_c", "self.gnc(g)"),
    ]),
    "eval": ("x", "torch.randn(2, 3, 2)", "self.bn = nn.BatchNorm1d(3); self.eval()", [
        ("batch_norm_eval", "self.bn(x)"), ("batch_norm_eval_twice", "self.bn(x) * 2"),
    ]),
}
DIFF_CASES = [(group, i, name) for group, (*_, exprs) in DIFFERENTIAL.items() for i, (name, _) in enumerate(exprs)]


def _group_source(group: str) -> str:
    signature, inputs, init, exprs = DIFFERENTIAL[group]
    return _model("(" + ", ".join(expr for _, expr in exprs) + ")", inputs, signature, init)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, RefGraph]:
    directory = tmp_path_factory.mktemp("reductions")
    sources = dict(STRUCTURE)
    sources.update({f"diff_{group}": _group_source(group) for group in DIFFERENTIAL})
    return capture_sources(directory, sources, 60)


# ---- structure, proved -------------------------------------------------------------------------------

E = z3.BitVec("e", 64)
K, M = z3.BitVec("k_expected", 64), z3.BitVec("m_expected", 64)


def _real_fn(name: str) -> z3.FuncDeclRef:
    return z3.Function(name, z3.BitVecSort(64), z3.RealSort())


def _f32(x: float) -> z3.ExprRef:
    return z3.RealVal(Fraction(struct.unpack("<f", struct.pack("<f", x))[0]))


def _valid(hyp: z3.BoolRef, claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.set(timeout=20000)
    solver.add(hyp, z3.Not(claim))
    return solver.check() == z3.unsat


def _proved(claim: z3.ExprRef, numel: int) -> bool:
    """The claim, for every output index below numel, by z3 alone (comprehensions uninterpreted, so two
    of them are equal when their bounds are and their lambdas are provably equal arrays)."""
    return _valid(z3.ULT(E, numel), claim)


def _outer_comprehensions(t: z3.ExprRef, found: dict[int, z3.ExprRef]) -> None:
    if is_comprehension(t):
        found.setdefault(t.get_id(), t)
    elif z3.is_app(t):
        for child in t.children():
            _outer_comprehensions(child, found)


_fresh = iter(range(10**9))


def _equivalent(t1: z3.ExprRef, t2: z3.ExprRef, hyp: z3.BoolRef) -> bool:
    """t1 = t2 under hyp, for terms with comprehensions nested in comprehension bodies, where z3 alone
    gives up (or worse: it does not relate two comprehensions occurring only under a binder). As the
    matcher does: comprehensions are equal when their bounds are provably equal and their bodies, both
    instantiated with one fresh index j in range, are (recursively) equal; each class of equal
    comprehensions is replaced by one symbol and the rest is proved by z3."""
    found: dict[int, z3.ExprRef] = {}
    _outer_comprehensions(t1, found)
    _outer_comprehensions(t2, found)
    classes: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    pairs = []
    for c in found.values():
        rep = next((sym for first, sym in classes if _same_comprehension(first, c, hyp)), None)
        if rep is None:
            rep = z3.Real(f"C!{next(_fresh)}")
            classes.append((c, rep))
        pairs.append((c, rep))
    a, b = (z3.substitute(t, *pairs) if pairs else t for t in (t1, t2))
    return _valid(hyp, a == b)


def _same_comprehension(c1: z3.ExprRef, c2: z3.ExprRef, hyp: z3.BoolRef) -> bool:
    if c1.decl() != c2.decl():
        return False
    *init1, lo1, hi1, f1 = c1.children()
    *init2, lo2, hi2, f2 = c2.children()
    if not _valid(hyp, z3.And(lo1 == lo2, hi1 == hi2)):
        return False
    if init1 and not _equivalent(init1[0], init2[0], hyp):
        return False
    j = z3.BitVec(f"j!{next(_fresh)}", 64)
    body1, body2 = (z3.substitute_vars(f.body(), j) for f in (f1, f2))
    return _equivalent(body1, body2, z3.And(hyp, z3.ULE(lo1, j), z3.ULT(j, hi1)))


def _terms(graph: RefGraph, **tensors: z3.FuncDeclRef) -> list[z3.ExprRef]:
    return [out(E) for out in reference_outputs(graph, RefEnv(dict(tensors), {}))]


A_, B_, X_ = _real_fn("A"), _real_fn("B"), _real_fn("X")


@pytest.fixture(scope="module")
def x45(graphs) -> dict[str, z3.ExprRef]:
    return dict(zip(X45, _terms(graphs["x45"], **{"input:0": X_}), strict=True))


def test_sum_over_one_dim(x45):
    term = x45["sum"]
    assert _proved(term == sum_over(0, 5, K, X_(E * 5 + K)), 4)
    assert not _proved(term == sum_over(0, 4, K, X_(E * 5 + K)), 4)         # the check is not vacuous
    assert not _proved(term == sum_over(0, 5, K, X_(E * 4 + K)), 4)


def test_sum_keepdim_negative_dims_nest_first_dim_outermost(graphs):
    (term,) = _terms(graphs["sum_keep"], **{"input:0": X_})
    expected = sum_over(0, 3, K, sum_over(0, 5, M, X_(K * 20 + E * 5 + M)))
    assert _equivalent(term, expected, z3.ULT(E, 4))
    assert not _equivalent(term, sum_over(0, 3, K, sum_over(0, 5, M, X_(K * 20 + E * 5 + M + 1))), z3.ULT(E, 4))
    assert term.arg(2).var_name(0).endswith("!r0")      # outermost comprehension: the first reduced dim


def test_max_values_and_amax_start_at_index_0(x45):
    expected = max_over(X_(E * 5), 1, 5, K, X_(E * 5 + K))
    for name in ("max_values", "amax"):
        assert x45[name].decl() == MAX_FROM
        assert _proved(x45[name] == expected, 4), name
    assert not _proved(x45["amax"] == max_over(X_(E * 5 + 1), 1, 5, K, X_(E * 5 + K)), 4)


def test_mean_divides_by_the_exact_count(x45):
    assert _proved(x45["mean"] == sum_over(0, 5, K, X_(E * 5 + K)) / 5, 4)


def test_mm_matvec_bmm(graphs):
    fns = {f"input:{i}": _real_fn(f"I{i}") for i in range(6)}
    mm, mv, bmm = _terms(graphs["products"], **fns)
    a, b, c, d, p, q = fns.values()
    row, col = z3.UDiv(E, 5), z3.URem(E, 5)
    assert _proved(mm == sum_over(0, 3, K, a(row * 3 + K) * b(K * 5 + col)), 20)
    assert not _proved(mm == sum_over(0, 3, K, a(row * 3 + K) * b(K * 3 + col)), 20)
    assert _proved(mv == sum_over(0, 3, K, c(E * 3 + K) * d(K)), 4)
    n, i, j = z3.UDiv(E, 20), z3.URem(z3.UDiv(E, 5), 4), z3.URem(E, 5)
    assert _proved(bmm == sum_over(0, 3, K, p(n * 12 + i * 3 + K) * q(n * 15 + K * 5 + j)), 40)


def test_linear_and_layer_norm_read_their_parameters(graphs):
    w, bias, lw, lb = (_real_fn(n) for n in ("W", "Bias", "LW", "LB"))
    linear, norm = _terms(graphs["params"], **{"input:0": A_, "input:1": X_, "param:fc.weight": w,
                                                "param:fc.bias": bias, "param:ln.weight": lw, "param:ln.bias": lb})
    row, col = z3.UDiv(E, 5), z3.URem(E, 5)
    assert _proved(linear == sum_over(0, 3, K, A_(row * 3 + K) * w(col * 3 + K)) + bias(col), 20)
    mean = sum_over(0, 5, M, X_(row * 5 + M)) / 5
    var = sum_over(0, 5, K, (X_(row * 5 + K) - mean) * (X_(row * 5 + K) - mean)) / 5
    expected = (X_(E) - mean) * (1 / ideal("sqrt")(var + _f32(1e-5))) * lw(col) + lb(col)
    assert _equivalent(norm, expected, z3.ULT(E, 20))
    assert not _equivalent(norm, expected - lb(col) + lb(row), z3.ULT(E, 20))


def test_softmax_subtracts_the_row_max(x45):
    row = z3.UDiv(E, 5) * 5
    m = max_over(X_(row), 1, 5, M, X_(row + M))
    exp = ideal("exp")
    assert _equivalent(x45["softmax"], exp(X_(E) - m) / sum_over(0, 5, K, exp(X_(row + K) - m)), z3.ULT(E, 20))
    assert not _equivalent(x45["softmax"], exp(X_(E) - m) / sum_over(0, 5, K, exp(X_(row + K))), z3.ULT(E, 20))


def test_var_correction(x45):
    mean = sum_over(0, 5, M, X_(E * 5 + M)) / 5
    squares = sum_over(0, 5, K, (X_(E * 5 + K) - mean) * (X_(E * 5 + K) - mean))
    hyp = z3.ULT(E, 4)
    assert _equivalent(x45["var_biased"], squares / 5, hyp)
    assert not _equivalent(x45["var_biased"], squares / 4, hyp)
    assert _equivalent(x45["var_unbiased"], squares / 4, hyp)
    assert not _equivalent(x45["var_unbiased"], squares / 5, hyp)


def test_cumsum_is_a_prefix_sum(x45):
    row, col = z3.UDiv(E, 5) * 5, z3.URem(E, 5)
    assert _proved(x45["cumsum"] == sum_over(0, col + 1, K, X_(row + K)), 20)
    assert not _proved(x45["cumsum"] == sum_over(0, col, K, X_(row + K)), 20)


def test_cumprod_is_a_prefix_product(x45):
    row, col = z3.UDiv(E, 5) * 5, z3.URem(E, 5)
    assert _proved(x45["cumprod"] == prod_over(0, col + 1, K, X_(row + K)), 20)
    assert not _proved(x45["cumprod"] == prod_over(0, col, K, X_(row + K)), 20)
    assert not _proved(x45["cumprod"] == sum_over(0, col + 1, K, X_(row + K)), 20)   # a product, not a sum


def test_terms_are_deterministic_and_name_their_node(graphs):
    env = {"input:0": A_, "input:1": X_, "param:fc.weight": A_, "param:fc.bias": B_, "param:ln.weight": A_,
           "param:ln.bias": B_}
    first, again = _terms(graphs["params"], **env), _terms(graphs["params"], **env)
    assert [t.sexpr() for t in first] == [t.sexpr() for t in again]
    assert "native_layer_norm!m1" in first[1].sexpr() and "native_layer_norm!v1" in first[1].sexpr()
    assert "addmm!k" in first[0].sexpr()


@pytest.mark.parametrize("name, message", [
    ("max_both", "aten.max.dim: the indices result is not modelled"),
    ("logcumsumexp", "aten.logcumsumexp.default"), ("prod", "aten.prod.dim_int"),
    ("argmin_flat", "aten.argmin.default over all dims"),
    ("int_sum", "aten.sum.dim_IntList with result dtype int64"),
])
def test_unsupported_names_the_op(graphs, name, message):
    dtype = graphs[name].user_inputs[0].dtype
    x = X_ if dtype.startswith("float") else z3.Function("N", z3.BitVecSort(64), z3.BitVecSort(64))
    with pytest.raises(Unsupported, match=message.replace(".", r"\.")):
        reference_outputs(graphs[name], RefEnv({"input:0": x}, {}))


def test_table_names_real_aten_overloads():
    for target in REDUCTION_OPS:
        _, name, overload = target.split(".")
        assert getattr(getattr(torch.ops.aten, name), overload) is not None, target


# ---- differential check against torch: comprehensions expanded --------------------------------------

_REAL_OPS = {
    z3.Z3_OP_ADD: lambda *a: sum(a[1:], a[0]), z3.Z3_OP_MUL: lambda *a: math.prod(a[1:], start=a[0]),
    z3.Z3_OP_SUB: lambda a, *b: a - sum(b), z3.Z3_OP_UMINUS: lambda a: -a, z3.Z3_OP_DIV: lambda a, b: a / b,
    z3.Z3_OP_LE: lambda a, b: a <= b, z3.Z3_OP_LT: lambda a, b: a < b, z3.Z3_OP_GE: lambda a, b: a >= b,
    z3.Z3_OP_GT: lambda a, b: a > b, z3.Z3_OP_EQ: lambda a, b: a == b, z3.Z3_OP_NOT: lambda a: not a,
    z3.Z3_OP_AND: lambda *a: all(a), z3.Z3_OP_OR: lambda *a: any(a), z3.Z3_OP_TO_REAL: lambda a: a,
}


class _Evaluator:
    """Exact value of a closed term: inputs by their values, ideal functions by mpmath, and a comprehension
    as the sum / product / max / min of its body at each index of its (concrete) range, the body obtained by
    applying the lambda to the index (z3 beta-reduces the select)."""

    def __init__(self, values: dict[str, torch.Tensor]):
        self.values = {name: v.reshape(-1) for name, v in values.items()}
        self.cache: dict[int, tuple[z3.ExprRef, object]] = {}

    def index(self, t: z3.ExprRef) -> int:
        v = z3.simplify(t)
        assert z3.is_bv_value(v), f"index {t} is not concrete"
        return v.as_long()

    def __call__(self, t: z3.ExprRef) -> object:
        key = t.get_id()
        if key not in self.cache:
            self.cache[key] = (t, self._value(t))
        return self.cache[key][1]

    def _value(self, t: z3.ExprRef) -> object:
        if z3.is_rational_value(t):
            return mpmath.mpf(t.numerator_as_long()) / t.denominator_as_long()
        if z3.is_true(t) or z3.is_false(t):
            return z3.is_true(t)
        if z3.is_bv(t):
            return self.index(t)
        decl = t.decl()
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            return self(t.arg(1)) if self(t.arg(0)) else self(t.arg(2))
        if decl in (SUM, PROD, MAX_FROM, MIN_FROM):
            *init, lo, hi, body = t.children()
            items = [self(z3.simplify(z3.Select(body, z3.BitVecVal(j, 64))))
                     for j in range(self.index(lo), self.index(hi))]
            if decl == SUM:
                return sum(items, mpmath.mpf(0))
            if decl == PROD:
                return math.prod(items, start=mpmath.mpf(1))
            return (max if decl == MAX_FROM else min)([self(init[0])] + items)
        if decl.name() in self.values:
            value = self.values[decl.name()][self.index(t.arg(0))].item()
            return bool(value) if z3.is_bool(t) else mpmath.mpf(value)
        if decl.name() in IDEAL_FUNCTIONS:
            return IDEAL_FUNCTIONS[decl.name()].exact(self(t.arg(0)))
        return _REAL_OPS[decl.kind()](*(self(c) for c in t.children()))


def _instantiate(source: str, values: list[torch.Tensor]) -> tuple[torch.nn.Module, torch.Tensor]:
    """The model with float32-exact random parameters and buffers (positive: running variances), and its
    float64 output on `values`."""
    namespace: dict = {}
    exec(source, namespace)
    model = namespace["Model"]()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5 + 1)
        for b in model.buffers():
            if b.is_floating_point():
                b.copy_(torch.rand(b.shape, generator=gen) + 0.5)
    expected = model.double()(*[v.double() for v in values])
    return model, expected


@pytest.mark.parametrize("group, position, name", DIFF_CASES, ids=[c[2] for c in DIFF_CASES])
def test_matches_torch(graphs, group, position, name):
    graph = graphs[f"diff_{group}"]
    torch.manual_seed(0)
    values = [v.float() for v in eval(f"[{DIFFERENTIAL[group][1]}]", {"torch": torch})]
    model, expected = _instantiate(_group_source(group), values)
    state = model.state_dict()   # after forward: a training-mode batch norm updated its running statistics,
    decls, tensors = {}, {}      # which its output does not read
    for i, v in enumerate(values):
        decls[f"input:{i}"], tensors[f"In{i}"] = _real_fn(f"In{i}"), v
    for k, key in enumerate(graph.params):
        decls[f"param:{key}"], tensors[f"P{k}"] = _real_fn(f"P{k}"), state[key]
    out = reference_outputs(graph, RefEnv(decls, {}))[position]
    evaluate = _Evaluator(tensors)
    expected = expected[position].double().reshape(-1)
    with mpmath.workdps(40):
        for e in range(expected.numel()):
            got = evaluate(out(z3.BitVecVal(e, 64)))
            assert float(got) == pytest.approx(expected[e].item(), rel=1e-7, abs=1e-9), (name, e)


# ---- table entries core-ATen decomposition does not produce, on hand-built graphs -------------------

DIRECT_INPUTS = {"x": (3, 4), "z": (2, 3, 4), "v": (4,), "w": (4,), "p": (2, 4, 3), "q": (3,)}
DIRECT = [
    ("aten.sum.default", {"self": "x"}),
    ("aten.var.dim", {"self": "z", "dim": [0, 2], "unbiased": True, "keepdim": True}),
    ("aten.var.default", {"self": "x", "unbiased": False}),
    ("aten.var.correction", {"self": "x", "dim": [1], "correction": 2, "keepdim": False}),
    ("aten.std.correction", {"self": "z", "dim": [-1], "correction": 0.5, "keepdim": False}),
    ("aten.std.dim", {"self": "z", "dim": [1], "unbiased": True, "keepdim": False}),
    ("aten.std_mean.correction", {"self": "x", "dim": None, "correction": 1, "keepdim": False}),
    ("aten.var_mean.dim", {"self": "z", "dim": [0, 1], "unbiased": False, "keepdim": True}),
    ("aten.mv.default", {"self": "x", "vec": "v"}),
    ("aten.dot.default", {"self": "v", "tensor": "w"}),
    ("aten.addmm.default", {"self": "q", "mat1": "x", "mat2": "p0", "beta": 0.5, "alpha": 2}),
    ("aten.addmm.default", {"self": "q", "mat1": "x", "mat2": "p0", "beta": 0, "alpha": 1}),
    ("aten.baddbmm.default", {"self": "q", "batch1": "z", "batch2": "p", "beta": 1, "alpha": 0.25}),
    ("aten.any.dims", {"self": "zb", "dim": [0, 2], "keepdim": False}),
    ("aten.all.default", {"self": "zb"}),
    ("aten.linalg_vector_norm.default", {"self": "z", "ord": -math.inf, "dim": [1], "keepdim": True,
                                         "dtype": None}),
    ("aten.cumsum.default", {"self": "z", "dim": 0, "dtype": torch.float64}),
    ("aten.cumprod.default", {"self": "z", "dim": -1, "dtype": None}),
    ("aten._native_batch_norm_legit.default", {"input": "z", "weight": "q", "bias": "q", "running_mean": "q",
                                               "running_var": "qa", "training": False, "momentum": 0.1,
                                               "eps": 1e-5}),
    ("aten._native_batch_norm_legit_functional.default", {
        "input": "z", "weight": None, "bias": "q", "running_mean": "q", "running_var": "qa", "training": True,
        "momentum": 0.1, "eps": 1e-5}),
    ("aten.native_layer_norm.default", {"input": "z", "normalized_shape": [4], "weight": "w", "bias": None,
                                        "eps": 1e-5}),
    ("aten.native_group_norm.default", {"input": "p", "weight": None, "bias": None, "N": 2, "C": 4, "HxW": 3,
                                        "group": 2, "eps": 1e-5}),
    ("aten.max.dim", {"self": "z", "dim": -2, "keepdim": True}),
    ("aten.gt.Scalar", {"self": "x", "other": math.inf}),      # reals are finite: a constant answer
    ("aten.ne.Scalar", {"self": "x", "other": -math.inf}),
    ("aten.flip.default", {"self": "z", "dims": [0, -1]}),
    ("aten.full_like.default", {"self": "x", "fill_value": 0.25}),
]


def _direct_values() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(2)
    values = {name: torch.randn(shape, generator=gen) for name, shape in DIRECT_INPUTS.items()}
    values["p0"] = values["p"][0]
    values["zb"] = values["z"] > -0.5
    values["qa"] = values["q"].abs() + 0.5
    return values


def _spec(t: torch.Tensor) -> dict:
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}


def _direct_graph(target: str, args: dict, values: dict[str, torch.Tensor]) -> tuple[RefGraph, list, list]:
    """A one-op graph in capture's format whose outputs are every tensor result of the op (through
    getitem when it has several), and torch's results (float64 for float inputs)."""
    op = torch.ops.aten
    for part in target.split(".")[1:]:
        op = getattr(op, part)
    wide = {k: (values[v].double() if values[v].is_floating_point() else values[v])
            if isinstance(v, str) and v in values else v for k, v in args.items()}
    results = op(**{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in wide.items()})
    several = isinstance(results, tuple)
    results = list(results) if several else [results]

    def encode(v):
        if isinstance(v, str) and v in values:
            return {"node": v}
        if isinstance(v, float):
            return {"float": v.hex()}
        return {"dtype": str(v).removeprefix("torch.")} if isinstance(v, torch.dtype) else v

    def spec(t: torch.Tensor) -> dict:   # float64 only where the op asked for it
        wanted = args.get("dtype")
        dtype = t.dtype if wanted is not None or not t.is_floating_point() else torch.float32
        return {"shape": list(t.shape), "dtype": str(dtype).removeprefix("torch.")}

    inputs = {n: v for n, v in values.items() if any(a == n for a in args.values())}
    nodes = [{"op": "placeholder", "name": n, "input": i, "out": _spec(v)} for i, (n, v) in enumerate(inputs.items())]
    nodes.append({"op": "call", "name": "r", "target": target, "args": {k: encode(v) for k, v in args.items()},
                  "out": [spec(t) for t in results] if several else spec(results[0])})
    outputs, kept = [], []
    for i, t in enumerate(results):
        if not several:
            outputs.append({"node": "r"})
        elif t.is_floating_point() and t.numel() and i < 3:   # not the indices, nor the running statistics
            nodes.append({"op": "call", "name": f"g{i}", "target": "getitem", "args": {"arg0": {"node": "r"},
                          "arg1": i}, "out": spec(t)})
            outputs.append({"node": f"g{i}"})
        else:
            continue
        kept.append(t)
    nodes.append({"op": "output", "name": "output", "args": outputs})
    graph = RefGraph.from_data({"user_inputs": [_spec(v) for v in inputs.values()], "params": {},
                                "outputs": [spec(t) for t in kept], "nodes": nodes})
    return graph, list(inputs.values()), kept


@pytest.mark.parametrize("target, args", DIRECT, ids=[f"{d[0]}-{i}" for i, d in enumerate(DIRECT)])
def test_table_entry_matches_torch(target, args):
    graph, inputs, expected = _direct_graph(target, args, _direct_values())
    decls = {f"input:{i}": z3.Function(f"In{i}", z3.BitVecSort(64), z3.RealSort() if v.is_floating_point()
                                       else z3.BoolSort()) for i, v in enumerate(inputs)}
    outs = reference_outputs(graph, RefEnv(decls, {}))
    evaluate = _Evaluator({f"In{i}": v if v.is_floating_point() else v.to(torch.int8)
                           for i, v in enumerate(inputs)})
    with mpmath.workdps(40):
        for out, want in zip(outs, expected, strict=True):
            want = want.double().reshape(-1)
            for e in range(want.numel()):
                got = evaluate(out(z3.BitVecVal(e, 64)))
                assert float(got) == pytest.approx(want[e].item(), rel=1e-7, abs=1e-9), (target, e)


def test_var_without_enough_elements_is_unsupported():
    graph, inputs, _ = _direct_graph("aten.var.correction", {"self": "v", "dim": None, "correction": 4,
                                                             "keepdim": False}, _direct_values())
    with pytest.raises(Unsupported, match="4 elements with correction 4"):
        reference_outputs(graph, RefEnv({"input:0": _real_fn("V")}, {}))
