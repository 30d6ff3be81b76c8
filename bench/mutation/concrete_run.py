"""Running a prepared task concretely on the independent PTX interpreter, and comparing two runs.

The inputs are a fixed pseudo-random function of (buffer, element index) — floats in [-2, 2), integers in
[0, 16) — generated only where a thread reads, so a buffer of a billion elements costs what the block
touches. Scalar inputs of the reference get fixed values too. Two blocks run: the grid's first and its last
(a ragged tail lives there). The original and its mutants see the same inputs, so their outcomes compare
element by element. The original runs whole blocks where the budget allows, a mutant a sample of threads
(where its threads cannot interact): an element the mutant's sample writes is then usually one the
original's run wrote too, whichever of its threads wrote it, and the two final values compare.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

import mpmath
import z3

from bench.mutation.decision import Decision
from semantics.errors import Unsupported
from semantics.ptx.machine import Buffer
from semantics.verdict import Problem

MAX_STEPS = 400_000     # ~20 s of the interpreter on a loaded machine; more is `undecided`
UNWRITTEN_READ = "never-written shared or local memory"   # how the interpreter names a value no write gave
FINDINGS_ONLY_STEPS = 100_000   # a mutant run only for an early violation (a dropped barrier shows at once)
REAL_TOLERANCE = mpmath.mpf("1e-30")   # the interpreter's reals carry 50 digits; below this is evaluation noise
SCALAR_FLOAT = 0.75
SCALAR_INT = 3


@dataclass
class Outcome:
    """What the blocks did: each output buffer's written elements, and the findings (property, message)."""

    writes: dict[str, dict[int, object]] = field(default_factory=dict)
    findings: list[tuple[str, str]] = field(default_factory=list)
    undecided: str | None = None     # why this run settles nothing (steps spent, an unsupported instruction)


def input_value(buffer: Buffer, index: int) -> float | int:
    """The fixed pseudo-random initial value of element `index` of `buffer`."""
    if buffer.init in ("zeros", "ones"):
        value = 0 if buffer.init == "zeros" else 1
        return float(value) if buffer.is_float else value
    digest = hashlib.blake2b(f"{buffer.name}:{index}".encode(), digest_size=8).digest()
    unit = struct.unpack("<Q", digest)[0] / 2**64
    return 4.0 * unit - 2.0 if buffer.is_float else int(unit * 16)


class SeededValues(dict):
    """The listed elements of a sparse buffer, listing every element: its `input_value`, made when read."""

    def __init__(self, buffer: Buffer, element) -> None:
        super().__init__()
        self.buffer, self.element = buffer, element

    def get(self, index: int, default: object = None) -> object:
        if index not in self:
            self[index] = self.element(input_value(self.buffer, index))
        return self[index]


def seeded(buffer: Buffer):
    """A sparse buffer of the interpreter whose every element holds its `input_value`."""
    from semantics.concrete import SparseBuffer
    sparse = SparseBuffer(buffer)
    sparse.values = SeededValues(buffer, sparse._element)
    return sparse


def blocks_to_run(problem: Problem) -> list[tuple[int, int, int]]:
    last = tuple(n - 1 for n in problem.launch.grid)
    return [(0, 0, 0)] if last == (0, 0, 0) else [(0, 0, 0), last]


def sample_threads(problem: Problem) -> list[tuple[int, int, int]]:
    """Pairs of neighbouring threads at the start, quarters and end of a block: a mutant that moves an element
    to a neighbour's thread still writes it inside the sample, where the two runs compare."""
    bx, by, bz = problem.launch.block
    n = bx * by * bz
    starts = {0, n // 4, n // 2, 3 * n // 4, n - 2}
    linear = {i + d for i in starts for d in (0, 1)} & set(range(n))
    return [(i % bx, i // bx % by, i // (bx * by)) for i in sorted(linear)]


def scalar_values(problem: Problem) -> dict[str, object]:
    """A fixed value for every symbolic scalar input among the kernel's arguments."""
    return {str(a): SCALAR_FLOAT if z3.is_real(a) else SCALAR_INT for a in problem.args if isinstance(a, z3.ExprRef)}


def _run(problem: Problem, threads: list | None, max_steps: int = MAX_STEPS):
    from semantics.concrete import Violation, run_blocks
    buffers = {name: seeded(b) for name, b in problem.buffers.items()}
    return run_blocks(problem.kernel, problem.launch, problem.args, buffers, blocks_to_run(problem),
                      threads=threads, max_steps=max_steps, scalars=scalar_values(problem), record=False,
                      stop=lambda event: isinstance(event, Violation))   # one violation is enough to know


def _run_some(problem: Problem, whole_blocks: bool, max_steps: int, budget_exceeded: type):
    """Whole blocks first when asked (a sample past the budget), else a sample; whole blocks where the
    interpreter refuses a sample (threads that interact)."""
    try:
        return _run(problem, None if whole_blocks else sample_threads(problem), max_steps)
    except budget_exceeded:
        if not whole_blocks:
            raise
    except Unsupported as exc:
        if "interact" not in str(exc):
            raise
        return _run(problem, None, max_steps)
    try:
        return _run(problem, sample_threads(problem), max_steps)
    except Unsupported as exc:
        if "interact" not in str(exc):
            raise
        raise budget_exceeded(f"whole blocks need more than {max_steps} steps") from exc


def outcome(problem: Problem, whole_blocks: bool = False, max_steps: int = MAX_STEPS) -> Outcome:
    """Run the chosen blocks of `problem` concretely: a sample of threads when they cannot interact (the
    interpreter refuses a sample otherwise), every thread when they can. `whole_blocks` (for an original,
    run once for all its mutants) tries every thread first and falls back to the sample past the budget."""
    try:
        from semantics.concrete import BudgetExceeded
    except ImportError:
        return Outcome(undecided="no concrete interpreter (semantics.concrete) to run the kernel")
    try:
        run = _run_some(problem, whole_blocks, max_steps, BudgetExceeded)
    except Exception as exc:  # noqa: BLE001 - whatever the interpreter cannot do decides nothing
        if UNWRITTEN_READ in str(exc):   # DESIGN §3 memory safety: a shared/local read of no earlier write
            return Outcome(findings=[("uninitialized_read", str(exc)[:300])])
        return Outcome(undecided=f"the interpreter stopped: {type(exc).__name__}: {exc}"[:300])
    outputs = [name for name, b in problem.buffers.items() if b.role == "output"]
    return Outcome({name: dict(run.written.get(name, {})) for name in outputs},
                   [(v.kind, v.detail) for v in run.violations])


def _close(a: object, b: object) -> bool | None:
    """True when equal, False when clearly different, None when only evaluation noise could tell them apart.
    Integers are bit patterns, floats reals (mpf); a nan is an undefined real, which settles nothing."""
    if type(a) is int and type(b) is int:
        return a == b
    if type(a) is int or type(b) is int:
        return False
    if mpmath.isnan(a) or mpmath.isnan(b):
        return None
    if a == b:
        return True
    if mpmath.isinf(a) or mpmath.isinf(b):
        return False
    return None if abs(a - b) <= REAL_TOLERANCE * max(1, abs(a), abs(b)) else False


def compare(original: Outcome, mutant: Outcome) -> Decision:
    """The filter's verdict on one mutant from the two outcomes (see filter.decide)."""
    if original.undecided or original.findings:
        return Decision("undecided", f"the original itself: {original.undecided or original.findings[0][1]}")
    if mutant.findings:
        prop, message = mutant.findings[0]
        return Decision("differs", f"{prop}: {message}")
    if mutant.undecided:
        return Decision("undecided", mutant.undecided)
    rounding = None   # the first element whose two values differ by noise only
    for name, writes in original.writes.items():
        other = mutant.writes.get(name, {})
        for index in sorted(set(writes) & set(other)):
            value = writes[index]
            close = _close(value, other[index])
            if close is False:
                return Decision("differs", f"{name}[{index}] = {other[index]!r}, the original gives {value!r}")
            if close is None and rounding is None:
                rounding = f"{name}[{index}] differs by rounding only ({other[index]!r} vs {value!r})"
    if rounding:
        return Decision("undecided", rounding)
    if any(set(w) != set(mutant.writes.get(name, {})) for name, w in original.writes.items()):
        # Not evidence: the threads (or blocks) left out of the run may write what these did not.
        return Decision("undecided", "the runs wrote different elements, and agree where both wrote")
    return Decision("same", "the same outputs on these blocks")
