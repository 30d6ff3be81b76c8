"""Running a prepared task concretely on the independent PTX interpreter, and comparing two runs.

The inputs are a fixed pseudo-random function of (buffer, element index) — floats in [-2, 2), integers in
[0, 16) — generated only where a thread reads, so a buffer of a billion elements costs what the block
touches. Scalar inputs of the reference get fixed values too. Two blocks run: the grid's first and its last
(a ragged tail lives there). The original and its mutants see the same inputs, so their outcomes compare
element by element.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass, field

import z3

from bench.mutation.decision import Decision
from semantics.ptx.machine import Buffer
from semantics.verdict import Problem

MAX_STEPS = 2_000_000
FLOAT_TOLERANCE = 1e-6   # relative: a smaller difference may be f32 rounding, so it decides nothing
SCALAR_FLOAT = 0.75


class NoInterpreter(Exception):
    """The concrete interpreter (semantics.concrete) is not there or cannot run this kernel."""


@dataclass
class Outcome:
    """What the blocks did: each output buffer's written elements, and the findings (property, message)."""

    writes: dict[str, dict[int, float | int]] = field(default_factory=dict)
    findings: list[tuple[str, str]] = field(default_factory=list)
    undecided: str | None = None     # why this run settles nothing (steps spent, an unsupported instruction)


def input_value(buffer: Buffer, index: int) -> float | int:
    """The fixed pseudo-random initial value of element `index` of `buffer`."""
    digest = hashlib.blake2b(f"{buffer.name}:{index}".encode(), digest_size=8).digest()
    unit = struct.unpack("<Q", digest)[0] / 2**64
    if buffer.init == "zeros":
        return 0.0 if buffer.is_float else 0
    if buffer.init == "ones":
        return 1.0 if buffer.is_float else 1
    return 4.0 * unit - 2.0 if buffer.is_float else int(unit * 16)


def blocks_to_run(problem: Problem) -> list[tuple[int, int, int]]:
    last = tuple(n - 1 for n in problem.launch.grid)
    return [(0, 0, 0)] if last == (0, 0, 0) else [(0, 0, 0), last]


def concrete_args(problem: Problem) -> list[object]:
    """The kernel's arguments with every symbolic scalar input given its fixed value."""
    def value(arg: object) -> object:
        if isinstance(arg, z3.ExprRef):
            return SCALAR_FLOAT if z3.is_real(arg) else 3
        return arg
    return [value(a) for a in problem.args]


def outcome(problem: Problem) -> Outcome:
    """Run the chosen blocks of `problem` concretely."""
    try:
        from semantics.concrete import run_blocks  # the interpreter arrives on its own branch
    except ImportError:
        return Outcome(undecided="no concrete interpreter (semantics.concrete) to run the kernel")
    try:
        run = run_blocks(problem.kernel, problem.launch, concrete_args(problem), problem.buffers,
                         blocks_to_run(problem), max_steps=MAX_STEPS, inputs=input_value)
    except Exception as exc:  # noqa: BLE001 - whatever the interpreter cannot do decides nothing
        return Outcome(undecided=f"the interpreter stopped: {type(exc).__name__}: {exc}")
    outputs = [name for name, b in problem.buffers.items() if b.role == "output"]
    return Outcome({name: dict(run.writes.get(name, {})) for name in outputs},
                   [(f.property, f.message) for f in run.findings])


def _close(a: float | int, b: float | int) -> bool | None:
    """True when equal, False when clearly different, None when only rounding could tell them apart."""
    if a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
        return True
    if isinstance(a, int) and isinstance(b, int):
        return False
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return False
    return None if abs(a - b) <= FLOAT_TOLERANCE * max(1.0, abs(a), abs(b)) else False


def compare(original: Outcome, mutant: Outcome) -> Decision:
    """The filter's verdict on one mutant from the two outcomes (see filter.decide)."""
    if original.undecided or original.findings:
        return Decision("undecided", f"the original itself: {original.undecided or original.findings[0][1]}")
    if mutant.findings:
        prop, message = mutant.findings[0]
        return Decision("differs", f"{prop}: {message}")
    if mutant.undecided:
        return Decision("undecided", mutant.undecided)
    rounding = None
    for name, writes in original.writes.items():
        other = mutant.writes.get(name, {})
        for index in sorted(set(writes) ^ set(other))[:1]:
            return Decision("differs", f"{name}[{index}] is written by only one of the two")
        for index, value in writes.items():
            close = _close(value, other[index])
            if close is False:
                return Decision("differs", f"{name}[{index}] = {other[index]!r}, the original gives {value!r}")
            if close is None and rounding is None:
                rounding = f"{name}[{index}] differs by rounding only ({other[index]!r} vs {value!r})"
    return Decision("undecided", rounding) if rounding else Decision("same", "the same outputs on these blocks")
