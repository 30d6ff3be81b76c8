"""Reference capture: real `torch.export` of small KernelBench-style files, in the sandboxed worker.

The ordinary references are captured together in one worker call (a module fixture) because each cold
worker costs seconds; the huge-input and timeout cases get their own calls since what they check is
per call (memory, time).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from semantics.torch.capture import (
    ReferenceError,
    RefGraph,
    ScalarSpec,
    TensorSpec,
    capture_reference,
    capture_references,
)

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

REFERENCES = {
    "basic": """
        class Model(nn.Module):
            def __init__(self, features):
                super().__init__()
                self.ln = nn.LayerNorm(features)
                self.register_buffer("scale", torch.ones(features))

            def forward(self, x, s, k):
                y = F.leaky_relu(x, negative_slope=0.01) * 2.0 + s
                return y * self.scale + k, x.t()

        def get_inputs():
            return [torch.randn(8, 16), 0.5, 3]

        def get_init_inputs():
            return [16]
        """,
    "cuda": """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(4, device="cuda"))

            def forward(self, x):
                return x + self.w + torch.zeros(4, device="cuda")

        def get_inputs():
            return [torch.randn(3, 4).cuda().to("cuda", torch.float16)]

        def get_init_inputs():
            return []
        """,
    "no_model": """
        def get_inputs():
            return [torch.randn(4)]
        """,
    "no_inputs": """
        class Model(nn.Module):
            def forward(self, x):
                return x
        """,
    "data_dependent": """
        class Model(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                return -x

        def get_inputs():
            return [torch.randn(4, 4)]
        """,
    "bad_input": """
        class Model(nn.Module):
            def forward(self, x):
                return x

        def get_inputs():
            return ["not a tensor"]
        """,
    "prints": """
        print("noise on stdout")

        class Model(nn.Module):
            def forward(self, x):
                print("more noise")
                return torch.relu(x)

        def get_inputs():
            return [torch.randn(5)]

        def get_init_inputs():
            return []
        """,
}


def _write(directory: Path, name: str, body: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> dict[str, RefGraph | ReferenceError]:
    directory = tmp_path_factory.mktemp("refs")
    names = list(REFERENCES)
    paths = [_write(directory, n, REFERENCES[n]) for n in names]
    paths.append(paths[0])                            # the same file twice: capture is deterministic
    paths.append(directory / "missing.py")
    results = capture_references(paths, timeout_s=60)
    return dict(zip([*names, "basic_again", "missing"], results, strict=True))


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _node(graph: RefGraph, target: str) -> dict:
    return next(n for n in graph.nodes if n.get("target") == target)


def test_specs_of_inputs_params_and_outputs(captured):
    g = captured["basic"]
    assert g.user_inputs == (TensorSpec((8, 16), "float32"), ScalarSpec("float"), ScalarSpec("int"))
    assert g.params == {"ln.weight": TensorSpec((16,), "float32"), "ln.bias": TensorSpec((16,), "float32"),
                        "scale": TensorSpec((16,), "float32")}
    assert g.outputs == (TensorSpec((8, 16), "float32"), TensorSpec((16, 8), "float32"))


def test_placeholders_and_core_aten_targets(captured):
    g = captured["basic"]
    placeholders = {n["name"]: n for n in g.nodes if n["op"] == "placeholder"}
    assert {n.get("input") for n in placeholders.values()} >= {0, 1, 2}
    assert {n.get("param") for n in placeholders.values()} >= {"ln.weight", "ln.bias", "scale"}
    scalar = next(n for n in placeholders.values() if n.get("input") == 1)
    assert scalar["out"] == {"shape": [], "dtype": "float32"}    # symbolic, not baked in
    targets = {n.get("target") for n in g.nodes}
    assert {"aten.leaky_relu.default", "aten.mul.Tensor", "aten.add.Tensor", "aten.permute.default"} <= targets
    output = g.nodes[-1]
    assert output["op"] == "output" and len(output["args"]) == 2


def test_constants_are_float32_values_and_scalars_stay_symbolic(captured):
    g = captured["basic"]
    slope = _node(g, "aten.leaky_relu.default")["args"]["negative_slope"]
    assert slope == {"float": _f32(0.01).hex()} and _f32(0.01) != 0.01
    text = json.dumps(list(g.nodes))
    assert "0.5" not in text and _f32(0.5).hex() not in text      # the scalar input is not a constant
    mul = next(n for n in g.nodes if n.get("target") == "aten.mul.Tensor" and
               n["args"]["other"] == {"float": (2.0).hex()})
    assert mul["args"]["self"] == {"node": _node(g, "aten.leaky_relu.default")["name"]}


def test_json_round_trip_hash_and_determinism(captured):
    g = captured["basic"]
    assert RefGraph.from_json(g.to_json()) == g
    assert captured["basic_again"].graph_hash == g.graph_hash
    assert len(g.graph_hash) == 64
    tampered = json.loads(g.to_json())
    tampered["nodes"][-2]["target"] = "aten.sub.Tensor"
    with pytest.raises(ValueError, match="hash"):
        RefGraph.from_json(json.dumps(tampered))


def test_cuda_requests_stay_on_meta(captured):
    g = captured["cuda"]
    assert isinstance(g, RefGraph), g
    assert g.user_inputs == (TensorSpec((3, 4), "float16"),)
    assert g.params == {"w": TensorSpec((4,), "float32")}
    assert "device" not in _node(g, "aten.full.default")["args"]


def test_reference_output_does_not_corrupt_the_result(captured):
    assert isinstance(captured["prints"], RefGraph)


@pytest.mark.parametrize("name, message", [
    ("no_model", "no `Model` class"),
    ("no_inputs", "no `get_inputs()` function"),
    ("data_dependent", "torch.export failed: GuardOnDataDependentSymNode"),
    ("bad_input", "get_inputs()[0] is a str"),
    ("missing", "not found"),
])
def test_errors_say_what_went_wrong(captured, name, message):
    error = captured[name]
    assert isinstance(error, ReferenceError)
    assert message in str(error)


def test_capture_reference_raises(tmp_path):
    with pytest.raises(ReferenceError, match="not found"):
        capture_reference(tmp_path / "nothing.py")


def test_huge_input_is_never_materialized(tmp_path):
    """8192 x 262144 float32 is 8 GiB; capture must only see its shape."""
    path = _write(tmp_path, "huge", """
        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x) * 2.0

        def get_inputs():
            return [torch.randn(8192, 262144)]

        def get_init_inputs():
            return []
        """)
    start = time.monotonic()
    g = capture_reference(path, timeout_s=60)
    assert time.monotonic() - start < 30
    assert g.user_inputs == (TensorSpec((8192, 262144), "float32"),)
    assert g.outputs == g.user_inputs
    # The capture's own peak memory: measured in a fresh process whose only descendants are the capture's
    # (this test process's RUSAGE_CHILDREN also counts every other test's subprocesses under xdist).
    probe = ("import resource, sys; from pathlib import Path; from semantics.torch.capture import capture_reference;"
             " capture_reference(Path(sys.argv[1]), timeout_s=60);"
             " print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak_kib = int(proc.stdout.split()[-1])   # largest finished descendant of the probe: the capture
    assert peak_kib < 2 * 1024 * 1024


def test_timeout(tmp_path):
    path = _write(tmp_path, "loop", """
        class Model(nn.Module):
            def forward(self, x):
                return x

        def get_inputs():
            while True:
                pass
        """)
    with pytest.raises(ReferenceError, match="timed out after 2 s"):
        capture_reference(path, timeout_s=2)
