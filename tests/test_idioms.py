"""Library idioms: nvcc's inline libm sequences are recognised and replaced by `lark.ideal`, exactly or not at all.

Kernels are compiled here with the nvcc on PATH (`-ptx -O3 -arch=sm_90`), as LARK's frontend does; the
tests are skipped when there is none. Recognition must survive what really varies between call sites
(register numbers, constants in registers shared between calls, interleaving with other code, contraction
of the final product into an fma, a loop around the call) and must refuse any sequence that differs from
the template in a constant, a modifier or its dataflow.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import z3

from semantics.axioms import AXIOMS, ideal, meaning
from semantics.ptx.ast import Instr, Kernel, Reg
from semantics.ptx.idioms import IDIOM_HANDLERS, IDIOMS, PSEUDO, rewrite_idioms
from semantics.ptx.machine import Launch, Thread, special_registers
from semantics.ptx.parser import parse_ptx
from semantics.ptx.state import KernelContext, ThreadState
from tests.tiny_tasks import elementwise_task

REPO = Path(__file__).resolve().parents[1]
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")

ELEMENTWISE = 'extern "C" __global__ void {name}(const {t}* __restrict__ x, {t}* __restrict__ y, int n) {{\n' \
              '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n' \
              '    if (i < n) {{ {t} v = x[i]; y[i] = {body}; }}\n}}\n'

ELEMENTWISE_KERNELS = {
    # name: (element type, expression of v, the idioms expected in body order)
    "k_expf": ("float", "expf(v)", ["expf"]),
    "k_silu": ("float", "v / (1.0f + expf(-v))", ["expf"]),
    "k_sigmoid": ("float", "1.0f / (1.0f + expf(-v))", ["expf"]),
    "k_tanhf": ("float", "tanhf(v)", ["tanhf"]),
    "k_logf": ("float", "logf(v)", ["logf"]),
    "k_erff": ("float", "erff(v)", ["erff"]),
    "k_gelu_erf": ("float", "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))", ["erff"]),
    "k_gelu_tanh": ("float", "0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))", ["tanhf"]),
    "k_two_exp": ("float", "expf(v) + expf(2.0f * v)", ["expf", "expf"]),
    "k_mish": ("float", "v * tanhf(logf(1.0f + expf(v)))", ["expf", "logf", "tanhf"]),
    "k_cond_log": ("float", "v > 0.0f ? logf(v) : 0.0f", ["logf"]),
    "k_exp_f64": ("double", "exp(v)", ["exp"]),
    "k_tanh_f64": ("double", "tanh(v)", ["tanh"]),
    "k_fast_tanh": ("float", "__tanhf(v)", []),   # tanh.approx: an instruction, not an idiom
    "k_log1pf": ("float", "log1pf(v)", ["log1pf"]),
    "k_expm1f": ("float", "expm1f(v)", ["expm1f"]),
    "k_elu": ("float", "v > 0.0f ? v : expm1f(v)", ["expm1f"]),
    # log1pf's paths meet where the threshold's path joins them: the pseudo-instruction goes on their edges
    "k_softplus": ("float", "v > 20.0f ? v : log1pf(expf(v))", ["expf", "log1pf"]),
    "k_coshf": ("float", "coshf(v)", ["coshf"]),
    "k_sinhf": ("float", "sinhf(v)", ["sinhf"]),
}

SOFTMAX = """
extern "C" __global__ void k_softmax(const float* x, float* y, int rows, int m) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float mx = -INFINITY;
        for (int j = 0; j < m; j++) mx = fmaxf(mx, x[r * m + j]);
        float s = 0.0f;
        for (int j = 0; j < m; j++) s += expf(x[r * m + j] - mx);
        for (int j = 0; j < m; j++) y[r * m + j] = expf(x[r * m + j] - mx) / s;
    }
}
"""


def nvcc_ptx(source: str, directory: Path) -> str:
    cu = directory / "kernels.cu"
    cu.write_text(source)
    out = directory / "kernels.ptx"
    subprocess.run([NVCC, "-ptx", "-O3", "-arch=sm_90", str(cu), "-o", str(out)], check=True,
                   capture_output=True, timeout=120)
    return out.read_text()


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    if NVCC is None:
        pytest.skip("nvcc not on PATH")
    source = "#include <math.h>\n" + SOFTMAX + "".join(
        ELEMENTWISE.format(name=name, t=t, body=body) for name, (t, body, _) in ELEMENTWISE_KERNELS.items())
    return nvcc_ptx(source, tmp_path_factory.mktemp("idioms"))


@pytest.fixture(scope="module")
def kernels(ptx: str) -> dict[str, Kernel]:
    return parse_ptx(ptx).kernels


def instrs(kernel: Kernel) -> list[Instr]:
    return [i for i in kernel.body if isinstance(i, Instr)]


def pseudos(kernel: Kernel) -> list[Instr]:
    return [i for i in instrs(kernel) if i.opcode == PSEUDO]


def loaded(kernel: Kernel) -> str:
    (ld,) = [i for i in instrs(kernel) if i.opcode == "ld" and ".global" in i.mods]
    return ld.operands[0].name


def stored(kernel: Kernel) -> str:
    (st,) = [i for i in instrs(kernel) if i.opcode == "st" and ".global" in i.mods]
    return st.operands[1].name


def float_bits_ops(kernel: Kernel) -> list[Instr]:
    """Integer-typed instructions that touch a float register: what the executor refuses."""
    float_regs = {r for r, t in kernel.regs.items() if t in (".f32", ".f64")}
    return [i for i in instrs(kernel) if i.opcode != "st" and any(m in i.mods for m in (".b32", ".b64", ".s32", ".u32"))
            and any(isinstance(o, Reg) and o.name in float_regs for o in i.operands)]


# ---------------------------------------------------------------------------------------------- recognition


@needs_nvcc
@pytest.mark.parametrize("name", list(ELEMENTWISE_KERNELS))
def test_elementwise_idioms_are_found(kernels: dict[str, Kernel], name: str) -> None:
    kernel = kernels[name]
    expected = ELEMENTWISE_KERNELS[name][2]
    rewritten, used = rewrite_idioms(kernel)
    assert sorted(used) == sorted(expected)
    assert len(pseudos(rewritten)) == len(expected)
    if not expected:
        assert rewritten is kernel
        return
    assert not float_bits_ops(rewritten), "no float bit manipulation is left"
    assert not [i for i in instrs(rewritten) if i.opcode in ("ex2", "lg2", "rcp") and ".approx" in i.mods]
    for p in pseudos(rewritten):
        idiom = next(i for i in IDIOMS if i.name in used and (f".{i.fn}", i.type, f".{i.name}") == p.mods)
        assert p.line > 0
        assert idiom.type == (".f64" if ELEMENTWISE_KERNELS[name][0] == "double" else ".f32")


@needs_nvcc
@pytest.mark.parametrize("name, fn", [("k_expf", "exp"), ("k_tanhf", "tanh"), ("k_logf", "log"), ("k_erff", "erf"),
                                      ("k_exp_f64", "exp"), ("k_tanh_f64", "tanh"), ("k_log1pf", "log1p"),
                                      ("k_expm1f", "expm1"), ("k_coshf", "cosh"), ("k_sinhf", "sinh")])
def test_pseudo_instruction_maps_the_loaded_value_to_the_stored_one(kernels, name: str, fn: str) -> None:
    kernel = kernels[name]
    rewritten, _ = rewrite_idioms(kernel)
    (p,) = pseudos(rewritten)
    assert p.mods[0] == f".{fn}"
    dst, src = p.operands
    assert src == Reg(loaded(kernel))
    assert dst == Reg(stored(kernel))
    # only the address arithmetic, the load and the store are left around it
    assert len(instrs(rewritten)) < 25


@needs_nvcc
def test_contracted_product_becomes_an_addition(kernels) -> None:
    """silu: nvcc folds `1 + expf(-v)` into `fma.rn(ex2(r), 2^n, 1.0)`."""
    kernel = kernels["k_silu"]
    rewritten, _ = rewrite_idioms(kernel)
    (p,) = pseudos(rewritten)
    tmp, src = p.operands
    neg = next(i for i in instrs(kernel) if i.opcode == "neg")
    assert neg.operands[1] == Reg(loaded(kernel)) and src == neg.operands[0]   # exp(-v)
    after = instrs(rewritten)[instrs(rewritten).index(p) + 1]
    assert (after.opcode, after.mods) == ("add", (".f32",))
    assert after.operands[1] == tmp and after.operands[2].bits == 0x3F800000   # exp(-v) + 1.0
    div = next(i for i in instrs(rewritten) if i.opcode == "div")
    assert div.operands[2] == after.operands[0]


@needs_nvcc
def test_expf_in_a_loop_is_found_in_every_unrolled_copy(kernels) -> None:
    kernel = kernels["k_softmax"]
    n_ex2 = sum(1 for i in instrs(kernel) if i.opcode == "ex2")
    rewritten, used = rewrite_idioms(kernel)
    assert n_ex2 >= 4 and used == ["expf"] * n_ex2
    assert not float_bits_ops(rewritten)
    assert [i.name for i in rewritten.body if not isinstance(i, Instr)] == \
           [i.name for i in kernel.body if not isinstance(i, Instr)], "loop structure is kept"


# ---------------------------------------------------------------------------------------------- exactness


def function(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    return ptx[ptx.rindex(".visible", 0, start):ptx.index("\n}\n", start) + 3]


HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n\n"


@needs_nvcc
@pytest.mark.parametrize("old, new", [
    ("0f3FB8AA3B", "0f3FB8AA3C"),                 # one constant, one ulp off (log2 e)
    ("0fCB40007F", "0fCB40007E"),                 # the magic shifter
    ("fma.rm.f32", "fma.rn.f32"),                 # one rounding modifier
    ("shl.b32 \t%r7, %r6, 23", "shl.b32 \t%r7, %r6, 22"),   # the exponent shift
])
def test_a_changed_sequence_is_not_matched(ptx: str, old: str, new: str) -> None:
    text = function(ptx, "k_expf")
    assert text.count(old) == 1
    kernel = parse_ptx(HEADER + text.replace(old, new)).kernels["k_expf"]
    rewritten, used = rewrite_idioms(kernel)
    assert used == [] and rewritten is kernel
    assert rewrite_idioms(parse_ptx(HEADER + text).kernels["k_expf"])[1] == ["expf"]   # the unchanged text


@needs_nvcc
def test_changed_dataflow_is_not_matched(ptx: str) -> None:
    """The second use of x reads another register: same instructions, different dataflow."""
    text = function(ptx, "k_expf")
    assert re.search(r"fma\.rn\.f32 \t%f12, %f1, ", text)
    changed = text.replace("fma.rn.f32 \t%f12, %f1, ", "fma.rn.f32 \t%f12, %f2, ")
    assert rewrite_idioms(parse_ptx(HEADER + changed).kernels["k_expf"])[1] == []


EXPF_BODY = """
    .reg .pred %p<4>;
    .reg .f32 %f<20>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.f32 %f1, [%rd2];
    fma.rn.f32 %f4, %f1, 0f3BBB989D, 0f3F000000;
    cvt.sat.f32.f32 %f5, %f4;
    fma.rm.f32 %f8, %f5, 0f437C0000, 0f4B400001;
    add.f32 %f9, %f8, 0fCB40007F;
    neg.f32 %f10, %f9;
{mid}
    fma.rn.f32 %f12, %f1, 0f3FB8AA3B, %f10;
    fma.rn.f32 %f14, %f1, 0f32A57060, %f12;
    mov.b32 %r6, %f8;
    shl.b32 %r7, %r6, 23;
    mov.b32 %f15, %r7;
    ex2.approx.ftz.f32 %f16, %f14;
    mul.f32 %f17, %f16, %f15;
    st.global.f32 [%rd2], %f17;
{tail}
    ret;
"""


def handmade(mid: str = "", tail: str = "", before: str = "") -> Kernel:
    text = HEADER + ".visible .entry k(.param .u64 k_param_0)\n{\n" + EXPF_BODY.replace("{mid}", mid).replace(
        "{tail}", tail)
    if before:
        text = text.replace("    fma.rn.f32 %f4,", before + "\n    fma.rn.f32 %f4,", 1)
    return parse_ptx(text + "}\n").kernels["k"]


def test_handmade_sequence_with_inline_constants_and_interleaving_is_matched() -> None:
    rewritten, used = rewrite_idioms(handmade(mid="    add.f32 %f18, %f1, %f1;\n    st.global.f32 [%rd2+4], %f18;"))
    assert used == ["expf"]
    (p,) = pseudos(rewritten)
    assert p.operands == (Reg("%f17"), Reg("%f1"))
    assert [i.opcode for i in instrs(rewritten)] == ["ld", "cvta", "ld", "add", "st", PSEUDO, "st", "ret"]


def test_input_redefined_between_uses_is_not_matched() -> None:
    assert rewrite_idioms(handmade(mid="    add.f32 %f1, %f1, 0f3F800000;"))[1] == []


def test_branch_into_the_middle_is_not_matched() -> None:
    kernel = handmade(before="    setp.eq.f32 %p1, %f1, 0f00000000;\n    @%p1 bra $L_mid;",
                      mid="$L_mid:")
    assert rewrite_idioms(kernel)[1] == []


def test_live_intermediate_is_kept() -> None:
    """An intermediate read after the sequence stays, with whatever computes it; the rest goes."""
    rewritten, used = rewrite_idioms(handmade(tail="    st.global.f32 [%rd2+8], %f8;"))
    assert used == ["expf"]
    ops = [i.opcode for i in instrs(rewritten)]
    assert ops == ["ld", "cvta", "ld", "fma", "cvt", "fma", PSEUDO, "st", "st", "ret"]


def test_clock_reads_are_never_one_value() -> None:
    """Two reads of a volatile special register are different values: a sequence built on both is no idiom."""
    kernel = handmade()
    text = HEADER + ".visible .entry k(.param .u64 k_param_0)\n{\n" + EXPF_BODY.replace("{mid}", "").replace(
        "{tail}", "")
    text = text.replace("ld.global.f32 %f1, [%rd2];", "mov.u32 %r1, %clock;\n    cvt.rn.f32.u32 %f1, %r1;")
    text = text.replace("    fma.rn.f32 %f12, %f1,", "    mov.u32 %r2, %clock;\n    cvt.rn.f32.u32 %f1, %r2;\n"
                                                     "    fma.rn.f32 %f12, %f1,")
    assert rewrite_idioms(kernel)[1] == ["expf"]
    assert rewrite_idioms(parse_ptx(text + "}\n").kernels["k"])[1] == []


# ---------------------------------------------------------------------------------------------- meaning


def test_ideal_call_applies_the_ideal_function_and_records_the_axiom() -> None:
    launch = Launch((1, 1, 1), (1, 1, 1))
    thread = Thread.fresh("")
    ctx = KernelContext(launch, thread, {}, {}, special_registers(thread, launch))
    x = z3.Real("x")
    for idiom in IDIOMS:
        state = ThreadState(ctx, {"%a": x})
        ins = Instr(PSEUDO, (f".{idiom.fn}", idiom.type, f".{idiom.name}"), (Reg("%b"), Reg("%a")), None, 7)
        IDIOM_HANDLERS[PSEUDO](state, ins)
        assert z3.eq(state.regs["%b"], meaning(idiom.fn)(x))
        assert idiom.axiom in ctx.axioms
    # a derived function is its definition from the ideal ones, not a symbol of its own
    assert z3.eq(meaning("log1p")(x), ideal("log")(1 + x)) and z3.eq(meaning("expm1")(x), ideal("exp")(x) - 1)


def test_every_idiom_has_an_axiom_that_names_its_template() -> None:
    assert len({i.axiom for i in IDIOMS}) == len(IDIOMS)
    for idiom in IDIOMS:
        statement = AXIOMS[idiom.axiom].statement
        assert idiom.fingerprint in statement, f"{idiom.axiom}: template changed without its axiom"
        assert f"{idiom.instructions} instructions" in statement
        assert ("double" in statement) == (idiom.type == ".f64")


# ---------------------------------------------------------------------------------------------- end to end

def verify(task: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(task / "lark.toml"), "--json"], cwd=REPO, capture_output=True, text=True, timeout=300)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"not JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def task(directory: Path, name: str, kernel: str, expr: str, source: str = "kernel.cu", entry: str = "k") -> Path:
    return elementwise_task(directory, name, kernel, expr, n=16384, blocks=64, source=source, entry=entry)


@needs_nvcc
@pytest.mark.parametrize("name, body, expr, axioms", [
    ("silu_expf", "v / (1.0f + expf(-v))", "torch.nn.functional.silu(x)", ["nvcc.expf"]),
    ("tanhf", "tanhf(v)", "torch.tanh(x)", ["nvcc.tanhf"]),
    ("gelu_erff", "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))", "torch.nn.functional.gelu(x)", ["nvcc.erff"]),
    ("softplus", "v > 20.0f ? v : log1pf(expf(v))", "torch.nn.functional.softplus(x)", ["nvcc.expf", "nvcc.log1pf"]),
])
def test_verified_end_to_end(tmp_path: Path, name: str, body: str, expr: str, axioms: list[str]) -> None:
    kernel = ELEMENTWISE.format(name="k", t="float", body=body)
    result = verify(task(tmp_path / name, name, "#include <math.h>\n" + kernel, expr))
    assert result["verdict"] == "verified", json.dumps(result, indent=2)
    assert set(axioms) <= set(result["axioms"])


@needs_nvcc
def test_wrong_kernel_is_still_refuted(tmp_path: Path) -> None:
    kernel = ELEMENTWISE.format(name="k", t="float", body="tanhf(v) + 0.001f")
    result = verify(task(tmp_path / "tanh_off", "tanh_off", kernel, "torch.tanh(x)"))
    assert result["verdict"] == "refuted" and result["properties"]["equivalence"] == "violated", result


@needs_nvcc
def test_the_other_path_into_a_split_merge_keeps_its_value(tmp_path: Path) -> None:
    """The edges split for log1pf leave the threshold's own path alone: above 20 this kernel stores 2x, which
    the witness shows (log1p(exp(x)) on every path would have made it softplus)."""
    kernel = ELEMENTWISE.format(name="k", t="float", body="v > 20.0f ? 2.0f * v : log1pf(expf(v))")
    result = verify(task(tmp_path / "softplus_2x", "softplus_2x", kernel, "torch.nn.functional.softplus(x)"))
    assert result["verdict"] == "refuted" and result["properties"]["equivalence"] == "violated", result
    (finding,) = result["findings"]
    witness = finding["witness"]
    assert witness["kernel_value"] == 2 * witness["reference_value"] and witness["reference_value"] > 20, finding


@needs_nvcc
def test_tampered_sequence_stays_unknown(tmp_path: Path, ptx: str) -> None:
    """The silu kernel with log2(e) one ulp off: not the idiom, so the float bit tricks are refused as before."""
    text = function(ptx, "k_silu").replace("0f3FB8AA3B", "0f3FB8AA3C")
    result = verify(task(tmp_path / "silu_tampered", "silu_tampered", HEADER + text,
                         "torch.nn.functional.silu(x)", source="kernel.ptx", entry="k_silu"))
    assert result["verdict"] == "unknown", result
    assert "float bits" in result["reason"]


@needs_nvcc
def test_counter_of_idioms_in_mish(kernels) -> None:
    assert Counter(rewrite_idioms(kernels["k_mish"])[1]) == Counter({"expf": 1, "logf": 1, "tanhf": 1})
