"""The libdevice functions Triton links (issue 16 item 3): the sequences Triton 3.9 emits for libdevice.exp,
tanh and erf (and tl.math.erf) are recognised exactly, each as its own axiom; a changed constant, operand or
sign trick is not; rsqrt is an instruction. End to end: examples/lib_triton_gelu_erf, _gelu_tanh, _silu_exp,
_rsqrt_norm and their twins."""

from __future__ import annotations

import importlib.util

import pytest
import z3

from semantics.errors import Unsupported
from semantics.ptx.ast import Instr, Reg
from semantics.ptx.idioms import IDIOM_HANDLERS, PSEUDO, rewrite_idioms
from semantics.ptx.libm import BY_NAME
from semantics.ptx.machine import Launch, Thread, special_registers
from semantics.ptx.parser import parse_ptx
from semantics.ptx.state import KernelContext, ThreadState

triton = pytest.importorskip("triton")

KERNEL = """import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def f_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, {call}(x), mask=mask)
"""
CALLS = {   # the call: the idiom found for each of a thread's 4 elements (none: an instruction, not an idiom)
    "libdevice.exp": "libdevice_expf",
    "libdevice.tanh": "libdevice_tanhf",
    "libdevice.erf": "libdevice_erff",
    "tl.math.erf": "libdevice_erff",
    "libdevice.rsqrt": None,
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, str]:
    from triton.backends.compiler import GPUTarget

    folder = tmp_path_factory.mktemp("libdevice")
    out = {}
    for call in CALLS:
        path = folder / f"k_{call.replace('.', '_')}.py"
        path.write_text(KERNEL.format(call=call))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        source = triton.compiler.ASTSource(fn=module.f_kernel, constexprs={"BLOCK": 128},
                                           signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32",
                                                      "BLOCK": "constexpr"})
        out[call] = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1}).asm["ptx"]
    return out


def found(ptx: str) -> list[str]:
    return rewrite_idioms(parse_ptx(ptx).kernels["f_kernel"])[1]


@pytest.mark.parametrize("call", CALLS)
def test_each_element_of_the_triton_kernel_is_one_idiom(compiled, call):
    assert found(compiled[call]) == ([CALLS[call]] * 4 if CALLS[call] else [])


def test_rsqrt_is_the_approximate_instruction(compiled):
    assert compiled["libdevice.rsqrt"].count("rsqrt.approx.ftz.f32") == 4


@pytest.mark.parametrize("call, old, new", [
    ("libdevice.exp", "0f3BBB989D", "0f3BBB989E"),           # a constant one ulp off
    ("libdevice.tanh", "0f41102CB4", "0f41102CB5"),          # the saturation threshold
    ("libdevice.tanh", "-2147483648", "2147483647"),         # the sign mask
    ("libdevice.erf", "0f3F8060FE", "0f3F8060FF"),           # the split between the two polynomials
    ("libdevice.erf", "fma.rn.ftz.f32", "fma.rz.ftz.f32"),   # another rounding
])
def test_a_changed_sequence_is_not_matched(compiled, call, old, new):
    assert old in compiled[call]
    assert found(compiled[call].replace(old, new)) == []


def test_a_select_is_the_same_whatever_its_type_suffix(compiled):
    ptx = compiled["libdevice.tanh"]
    assert "selp.b32" in ptx
    assert found(ptx.replace("selp.b32", "selp.f32").replace("1065353216", "0f3F800000")) == []  # constant bits
    assert found(ptx.replace("\tselp.b32 \t%r13,", "\tselp.f32 \t%r13,")) == ["libdevice_tanhf"] * 4


def _state() -> ThreadState:
    launch = Launch((1, 1, 1), (1, 1, 1))
    thread = Thread.fresh("")
    state = ThreadState(KernelContext(launch, thread, {}, {}, special_registers(thread, launch)))
    state.regs["%a"] = z3.Real("a")
    return state


def test_the_pseudo_instruction_names_its_idiom_and_its_axiom():
    state = _state()
    idiom = BY_NAME["libdevice_erff"]
    IDIOM_HANDLERS[PSEUDO](state, Instr(PSEUDO, (".erf", ".f32", ".libdevice_erff"), (Reg("%b"), Reg("%a")), None, 3))
    assert state.ctx.axioms == {idiom.axiom}
    assert str(state.regs["%b"]) == "erf(a)"


@pytest.mark.parametrize("mods", [(".erf", ".f32"), (".tanh", ".f32", ".libdevice_erff"),
                                  (".erf", ".f32", ".libdevice_nothing")])
def test_a_pseudo_instruction_that_does_not_name_its_own_idiom_is_refused(mods):
    with pytest.raises(Unsupported):
        IDIOM_HANDLERS[PSEUDO](_state(), Instr(PSEUDO, mods, (Reg("%b"), Reg("%a")), None, 3))

