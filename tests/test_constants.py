"""Kernel literals identified with reference constants (semantics/constants.py, axiom float.constant)."""

from __future__ import annotations

import math

from semantics.constants import f32_bits, identify, reference_constants, ulps_apart
from semantics.ptx.ast import FloatImm, Instr
from semantics.ptx.parser import parse_ptx
from semantics.torch.graph import RefGraph

SQRT_2_OVER_PI = 0x3F4C422A       # float32(sqrt(2/pi))
SPEC = {"shape": [4], "dtype": "float32"}


def _graph(calls: list[tuple[str, dict]]) -> RefGraph:
    nodes = [{"op": "placeholder", "name": "x", "input": 0, "out": SPEC}]
    for k, (target, args) in enumerate(calls):
        nodes.append({"op": "call", "name": f"c{k}", "target": target, "args": {"self": {"node": "x"}, **args},
                      "out": SPEC})
    nodes.append({"op": "output", "name": "output", "args": [{"node": nodes[-1]["name"]}]})
    return RefGraph.from_data({"user_inputs": [SPEC], "params": {}, "outputs": [SPEC], "nodes": nodes})


def _kernel(literals: list[str]):
    body = "".join(f"mul.f32 %f{i + 2}, %f1, {lit};\n" for i, lit in enumerate(literals))
    text = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry t()\n{\n.reg .f32 %f<9>;\n"
            f"{body}ret;\n}}\n")
    return parse_ptx(text).kernels["t"]


def _literals(kernel) -> list[int]:
    return [op.bits for i in kernel.body if isinstance(i, Instr) for op in i.operands if isinstance(op, FloatImm)]


def test_ulps_count_float32_steps_across_zero_and_exponents():
    assert ulps_apart(0x3F4C4229, SQRT_2_OVER_PI) == 1
    assert ulps_apart(0x3F800000, 0x3F7FFFFF) == 1                 # 1.0 and the float below it
    assert ulps_apart(0x80000001, 0x00000001) == 2                 # through +-0
    assert ulps_apart(f32_bits(1.0), f32_bits(1.0)) == 0


def test_reference_constants_are_float_arguments_and_ops_own_constants():
    graph = _graph([("aten.mul.Tensor", {"other": {"float": math.sqrt(2 / math.pi).hex()}}),
                    ("aten.gelu.default", {"approximate": "none"}),
                    ("aten.elu.default", {"alpha": {"float": (1.6732632423543772).hex()},
                                          "scale": {"float": (1.0507009873554805).hex()},
                                          "input_scale": {"float": (1.0).hex()}})])
    constants = reference_constants(graph)
    assert "aten.mul.Tensor other" in constants[SQRT_2_OVER_PI]
    assert constants[f32_bits(0.70710678118654752440)] == "1/sqrt(2)"
    assert constants[f32_bits(1.6732632423543772 * 1.0507009873554805)] == "alpha * scale"


def test_a_literal_within_two_ulps_is_replaced_and_listed_others_are_left():
    constants = {SQRT_2_OVER_PI: "sqrt(2/pi)", f32_bits(20.0): "threshold"}
    kernel = _kernel(["0f3F4C4229", "0f3F4C422A", "0f3F4C4227", "0fBF4C4229", "0f41A00002", "0f3F800000"])
    changed, made = identify(kernel, constants)
    assert _literals(changed) == [SQRT_2_OVER_PI, SQRT_2_OVER_PI, 0x3F4C4227, 0xBF4C4229, f32_bits(20.0),
                                  0x3F800000]
    assert [m.axiom for m in made] == ["constant 0x3F4C4229 taken as sqrt(2/pi) (0x3F4C422A)",
                                       "constant 0x41A00002 taken as threshold (0x41A00000)"]
    assert _literals(kernel)[0] == 0x3F4C4229                      # the parsed kernel itself is unchanged


def test_no_constant_near_leaves_the_kernel_as_it_is():
    kernel = _kernel(["0f3F4C4229"])
    changed, made = identify(kernel, {f32_bits(0.5): "half"})
    assert changed is kernel and made == []
