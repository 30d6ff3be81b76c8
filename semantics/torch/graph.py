"""The captured reference graph as plain data.

A `RefGraph` is what the sandboxed capture hands back: the shapes and dtypes of the reference's inputs,
parameters and outputs, and its core-ATen graph as JSON-able nodes. It is the only thing the trusted
semantics reads about the reference, so it is content-addressed: `graph_hash` is the SHA-256 of its
canonical JSON, and a certificate names the reference by that hash (DESIGN §7).

Node format (one dict per node, in graph order; names are unique):

* ``{"op": "placeholder", "name": n, "input": i, "out": SPEC}`` — user input i (``get_inputs()[i]``);
  ``{"op": "placeholder", "name": n, "param": "ln.weight", "out": SPEC}`` — a parameter or buffer;
  ``{"op": "placeholder", "name": n, "constant": "lifted_tensor_0", "out": SPEC}`` — a tensor constant
  created in ``forward`` (its value is unknown: capture never materializes tensors). A Python scalar
  input is a 0-d placeholder of dtype float32, int64 or bool (its `user_inputs` entry is a ScalarSpec).
* ``{"op": "call", "name": n, "target": "aten.add.Tensor", "args": {...}, "out": SPEC}`` — ``args``
  maps every argument name of the ATen schema to its value, defaults filled in (``device`` arguments are
  dropped: capture runs on the meta device).  ``out`` is ``{"shape": [...], "dtype": "float32"}``, null
  for an op that returns nothing, or, for an op with several results, a list of those. A target that
  is not an ATen op (``getitem``, picking one result of such an op) has its args as ``arg0``, ``arg1``.
* ``{"op": "output", "name": "output", "args": [VALUE, ...]}`` — the model's outputs in order.

Values: ``{"node": name}`` refers to an earlier node; ``{"float": float.hex(v)}`` is a float constant,
already rounded to the precision the op computes in (float32, or float64 for float64 ops), so it is the
exact real the op uses; ``{"dtype": "float32"}``, ``{"layout": "strided"}``,
``{"memory_format": "contiguous_format"}``; JSON ints, bools, strings, null and lists as themselves.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass
from typing import Any

FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
INT_WIDTHS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}


def round_float(value: float, double: bool = False) -> float:
    """`value` as the op sees it: rounded to float32 (the compute type of f16/bf16/f32 ops on the GPU),
    or unchanged for float64 ops. Overflow gives an infinity, as the hardware conversion does."""
    if double or not math.isfinite(value):
        return float(value)
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str

    def to_data(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class ScalarSpec:
    """A Python scalar returned by `get_inputs()`: symbolic, exported as a 0-d tensor placeholder."""

    kind: str  # 'float' | 'int' | 'bool'

    def to_data(self) -> dict[str, Any]:
        return {"scalar": self.kind}


def _tensor_spec(data: dict[str, Any]) -> TensorSpec:
    return TensorSpec(tuple(data["shape"]), data["dtype"])


def _spec_from_data(data: dict[str, Any]) -> TensorSpec | ScalarSpec:
    return ScalarSpec(data["scalar"]) if "scalar" in data else _tensor_spec(data)


def canonical_json(data: Any) -> str:
    """One text per value: sorted keys, no spaces, ASCII, and no NaN/Infinity (floats are tagged)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


LENGTH_BYTES = 8        # a capture worker's answer on a pipe: its length, then its canonical JSON


def framed(data: Any) -> bytes:
    """`data` as a capture worker writes it to a pipe: length-prefixed, so that the reader knows when it has
    all of it even while a process the reference forked still holds the pipe open."""
    body = canonical_json(data).encode()
    return len(body).to_bytes(LENGTH_BYTES, "little") + body


def frame_complete(received: bytes) -> bool:
    """Whether `received` holds a whole framed answer."""
    return len(received) >= LENGTH_BYTES and \
        len(received) - LENGTH_BYTES >= int.from_bytes(received[:LENGTH_BYTES], "little")


def unframed(received: bytes) -> Any:
    """The answer of a complete frame."""
    return json.loads(received[LENGTH_BYTES:])


@dataclass(frozen=True)
class RefGraph:
    user_inputs: tuple[TensorSpec | ScalarSpec, ...]
    params: dict[str, TensorSpec]
    outputs: tuple[TensorSpec, ...]
    nodes: tuple[dict[str, Any], ...]
    graph_hash: str

    def __hash__(self) -> int:   # the content hash; the generated one would fail on the dict fields
        return hash(self.graph_hash)

    @staticmethod
    def build(user_inputs: tuple[TensorSpec | ScalarSpec, ...], params: dict[str, TensorSpec],
              outputs: tuple[TensorSpec, ...], nodes: tuple[dict[str, Any], ...]) -> RefGraph:
        """A graph with its hash computed from the content."""
        body = _body(user_inputs, params, outputs, nodes)
        return RefGraph(user_inputs, params, outputs, nodes, _hash(body))

    def to_json(self) -> str:
        body = _body(self.user_inputs, self.params, self.outputs, self.nodes)
        return canonical_json({**body, "graph_hash": self.graph_hash})

    @staticmethod
    def from_data(data: dict[str, Any]) -> RefGraph:
        """A graph from its JSON body (user_inputs, params, outputs, nodes), hash computed."""
        return RefGraph.build(
            tuple(_spec_from_data(d) for d in data["user_inputs"]),
            {name: _tensor_spec(d) for name, d in data["params"].items()},
            tuple(_tensor_spec(d) for d in data["outputs"]),
            tuple(data["nodes"]),
        )

    @staticmethod
    def from_json(s: str) -> RefGraph:
        """Parse a graph; the stored hash must match the content (a tampered graph is rejected)."""
        data = json.loads(s)
        graph = RefGraph.from_data(data)
        if graph.graph_hash != data.get("graph_hash"):
            raise ValueError("reference graph hash does not match its content")
        return graph


def _body(user_inputs, params, outputs, nodes) -> dict[str, Any]:
    return {
        "user_inputs": [s.to_data() for s in user_inputs],
        "params": {name: s.to_data() for name, s in params.items()},
        "outputs": [s.to_data() for s in outputs],
        "nodes": list(nodes),
    }


def _hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()
