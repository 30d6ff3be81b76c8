"""Reproducing a finding on the concrete interpreter: a refutation is reported only when this says so.

`reproduce(problem, finding) -> (ok, detail)` runs the witness's block(s) on the witness's inputs (every
input element not listed takes the witness's `name[*]` default, else 0) and checks that the violation is
really there:
* equivalence, a wrong value (race freedom proved, so no other block writes the element): after the writer's
  block has run, the element's final value (the last
  write in barrier-interval order) is a finite real that differs from the reference's (the reference's
  element function, evaluated on the same inputs by `semantics.replay.Evaluator`) by more than
  TOLERANCE, and both agree with the recorded values within TOLERANCE; no race touched the element;
* memory safety: the witness's thread makes that access out of bounds or misaligned at the recorded byte
  offset, or its shared read finds no value any thread wrote before it (nor wrote in the same interval),
  or it reads a register no write on its path defined;
* race freedom: the two threads both touch an overlapping byte of the location, at least one with a plain
  write (or an atomic against a plain access), in the same barrier interval (one block) or in any
  (two blocks);
* barrier uniformity: the two threads of the block pass different sequences of barriers.

Two kinds are not run here, because running them would enumerate the grid: an element never written
(no thread of any block writes it) and an atomic accumulation's one-hot witness (every block may add into
the element). Their symbolic checks stand (`lark check` re-proves the first and recounts the second);
`reproduce` says so and accepts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import mpmath
import z3

from semantics.errors import Unsupported
from semantics.properties.common import PROVED, UNKNOWN, VIOLATED, Finding, PropertyResult
from semantics.ptx.ast import Instr
from semantics.ptx.types import types_in
from semantics.replay import Evaluator, NotConcrete

from .memory import END_BLOCK, Access, SparseBuffer, Violation
from .run import RunResult, run_blocks
from .values import MPF, real, signed

if TYPE_CHECKING:
    from semantics.verdict import Problem

TOLERANCE = 1e-6          # relative: recorded values are JSON floats, the interpreter's reals have 50 digits
FLOOR = 1e-30             # below this both values count as 0 (far above the interpreter's rounding)
MAX_STEPS = 40_000_000
VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}
_INPUT = re.compile(r"(.+)\[(\d+|\*)\]")


class NotReproduced(Exception):
    """The interpreter does not show the finding; the message says what it saw instead."""


@dataclass
class Inputs:
    """A witness's inputs: buffer elements, per-buffer defaults (`name[*]`) and scalar values by name."""

    elements: dict[str, dict[int, Fraction]]
    defaults: dict[str, Fraction]
    scalars: dict[str, Fraction]

    @staticmethod
    def of(problem: Problem, recorded: dict) -> Inputs:
        elements: dict[str, dict[int, Fraction]] = {}
        defaults, scalars = {}, {}
        for key, value in recorded.items():
            match = _INPUT.fullmatch(key)
            if match and match.group(1) in problem.buffers:
                name, index = match.groups()
                if index == "*":
                    defaults[name] = Fraction(value)
                else:
                    elements.setdefault(name, {})[int(index)] = Fraction(value)
            elif match is None and key in _scalar_names(problem):
                scalars[key] = Fraction(value)
            else:
                raise NotReproduced(f"input {key!r} names no buffer element or scalar input")
        return Inputs(elements, defaults, scalars)

    def buffers(self, problem: Problem) -> dict[str, SparseBuffer]:
        """The run's global buffers. An input with a value-range precondition only takes values in its range:
        a listed element outside it is no witness (the task says no caller passes it), and the elements the
        witness leaves open take the range's low end where 0 lies outside it."""
        for name, b in problem.buffers.items():
            if b.values is not None:
                self._within(name, b.elem_bytes * 8, *b.values)
        return {name: SparseBuffer(b, dict(self.elements.get(name, {})), self._fill(name, b))
                for name, b in problem.buffers.items()}

    def _within(self, name: str, bits: int, lo: int, hi: int) -> None:
        listed = [(f"{name}[{i}]", v) for i, v in self.elements.get(name, {}).items()]
        listed += [(f"{name}[*]", self.defaults[name])] if name in self.defaults else []
        for key, value in listed:
            v = int(value)
            v = v - (1 << bits) if v >= 1 << (bits - 1) else v      # the precondition compares signed values
            if not lo <= v <= hi:
                raise NotReproduced(f"input {key} = {v} lies outside its precondition [{lo}, {hi}]")

    def _fill(self, name: str, buffer) -> Fraction | None:
        if name in self.defaults or buffer.values is None or buffer.values[0] <= 0 <= buffer.values[1]:
            return self.defaults.get(name)
        return Fraction(buffer.values[0])

    def overrides(self) -> dict[tuple[str, int | None], Fraction]:
        found: dict[tuple[str, int | None], Fraction] = {(n, None): v for n, v in self.defaults.items()}
        found.update({(n, i): v for n, values in self.elements.items() for i, v in values.items()})
        return found


def recorded_inputs(w: dict) -> dict:
    """A witness's inputs with the symbolic sizes it names (`sizes`, or `scalars` in it or its two accesses
    before `verdict.name_sizes` lifts them) as the scalar inputs `scalar.<name>`."""
    inputs = dict(w.get("inputs", {}))
    for part in (w, w.get("first"), w.get("second")):
        if isinstance(part, dict):
            for key in ("sizes", "scalars"):
                inputs.update({f"scalar.{n}": v for n, v in part.get(key, {}).items()})
    return inputs


def _scalar_names(problem: Problem) -> set[str]:
    return {str(a) for a in problem.args if isinstance(a, z3.ExprRef)}


def _run(problem: Problem, inputs: Inputs, blocks: list, stop: Callable | None = None,
         first: list | None = None) -> RunResult:
    return run_blocks(problem.kernel, problem.launch, problem.args, inputs.buffers(problem), blocks,
                      max_steps=MAX_STEPS, stop=stop, scalars={k: real(v) for k, v in inputs.scalars.items()},
                      record=False, first=first)


def _coord(c: list) -> tuple[int, int, int]:
    return tuple(int(v) for v in (*c, 0, 0)[:3])


def _close(value: MPF, recorded: float) -> bool:
    return abs(value - real(recorded)) <= TOLERANCE * max(1.0, abs(recorded))


# ---------------------------------------------------------------- equivalence


def _wrong_value(problem: Problem, w: dict) -> str:
    inputs = Inputs.of(problem, recorded_inputs(w))
    buffer, index = w["buffer"], int(w["element_index"])
    b = problem.buffers[buffer]
    result = _run(problem, inputs, [_coord(w["block"])])
    if not result.completed:
        raise NotReproduced(f"the run of block {w['block']} ended early ({result.halted.detail})")
    if index not in result.written[buffer]:
        raise NotReproduced(f"block {w['block']} does not write {buffer}[{index}]")
    raced = [v for v in result.violations if v.kind == "race" and v.buffer == buffer
             and v.offset // b.elem_bytes == index]
    if raced:
        raise NotReproduced(f"{buffer}[{index}]'s final value depends on the schedule: {raced[0].detail}")
    got = result.final(buffer, index)
    if type(got) is int and z3.is_bv(problem.references[buffer](z3.BitVecVal(index, 64))):
        got = real(signed(got, 8 * b.elem_bytes))   # an integer output (argmax's int64 indices): its number
    if type(got) is not MPF or not mpmath.isfinite(got):
        raise NotReproduced(f"{buffer}[{index}] ends as {got!r}, not a finite real")
    want = _reference(problem, buffer, index, inputs)
    if abs(got - want) <= TOLERANCE * max(abs(got), abs(want), FLOOR):   # relative: a softmax's 1e-14 counts
        raise NotReproduced(f"{buffer}[{index}] ends as {float(got):.9g}, which is the reference's "
                            f"{float(want):.9g}")
    if not _close(got, w["kernel_value"]) or not _close(want, w["reference_value"]):
        raise NotReproduced(f"{buffer}[{index}] ends as {float(got):.9g} against the reference's {float(want):.9g}, "
                            f"not the recorded {w['kernel_value']} and {w['reference_value']}")
    return f"{buffer}[{index}] ends as {float(got):.9g}; the reference computes {float(want):.9g}"


def _reference(problem: Problem, buffer: str, index: int, inputs: Inputs) -> MPF:
    """The reference's element on the witness's inputs (ATen semantics, evaluated on reals)."""
    if problem.references is None or buffer not in problem.references:
        raise NotReproduced(f"no reference for {buffer}")
    term = problem.references[buffer](z3.BitVecVal(index, 64))
    pairs = [(z3.Real(n) if z3.is_real(a) else a, z3.RealVal(inputs.scalars[n]) if z3.is_real(a) else
              z3.BitVecVal(int(inputs.scalars[n]), a.size()))
             for a in problem.args if isinstance(a, z3.ExprRef) and (n := str(a)) in inputs.scalars]
    if pairs:
        term = z3.substitute(term, *pairs)
    solver = z3.Solver()
    solver.check()
    try:
        value = Evaluator(solver.model(), inputs.overrides()).value(term)
    except NotConcrete as exc:
        raise NotReproduced(f"the reference's {buffer}[{index}] has no real value ({exc})") from None
    return real(signed(value, term.size()) if z3.is_bv(term) and type(value) is int else value)


def _equivalence(problem: Problem, w: dict) -> str:
    if "other_inputs" in w:
        return ("a one-hot atomic accumulation is recounted symbolically (every block may add into the element: "
                "running them would enumerate the grid)")
    if "block" not in w:
        return "an element never written is checked symbolically (running every block would enumerate the grid)"
    return _wrong_value(problem, w)


# ---------------------------------------------------------------- memory safety


def _violation_at(problem: Problem, w: dict, kinds: tuple[str, ...], match: Callable[[Violation], bool]) -> str:
    block, thread = _coord(w["block"]), _coord(w["thread"])

    def hit(v: Violation) -> bool:
        return v.kind in kinds and v.block == block and v.thread == thread and match(v)

    def stop(event: Access | Violation) -> bool:
        return isinstance(event, Violation) and hit(v=event)
    result = _run(problem, Inputs.of(problem, recorded_inputs(w)), [block], stop, first=[thread])
    found = [v for v in result.violations if hit(v)]
    if not found:
        seen = result.halted.detail if result.halted else "no such violation"
        raise NotReproduced(f"block {w['block']} thread {w['thread']}: {seen}")
    return found[0].detail


def _memory_safety(problem: Problem, w: dict) -> str:
    line, buffer = w["line"], w.get("buffer")
    if "register" in w:
        return _violation_at(problem, w, ("undefined_register",), lambda v: v.line == line)
    if "byte_offset" not in w:   # a shared read of memory no thread wrote
        return _violation_at(problem, w, ("uninitialized_shared",), lambda v: v.line == line and v.buffer == buffer)
    offset = int(w["byte_offset"])
    return _violation_at(problem, w, ("out_of_bounds", "misaligned"),
                         lambda v: v.line == line and v.buffer == buffer and v.offset == offset)


# ---------------------------------------------------------------- races and barriers


def _shape(problem: Problem, line: int) -> tuple[int, int]:
    """(vector length, element bytes) of the memory access at `line`."""
    for ins in problem.kernel.body:
        if isinstance(ins, Instr) and ins.line == line and ins.opcode in ("ld", "ldu", "st", "atom", "red"):
            return next((VECTORS[m] for m in ins.mods if m in VECTORS), 1), types_in(ins.mods)[0].bytes
        if isinstance(ins, Instr) and ins.line == line and ins.opcode == "cp" and len(ins.operands) >= 3:
            return ins.operands[2].value // 4, 4   # a cp.async copy of 4-byte elements (Triton's fp32)
    raise NotReproduced(f"the kernel has no memory access at line {line}")


def _race(problem: Problem, w: dict) -> str:
    first, second, buffer = w["first"], w["second"], w["buffer"]
    who = [(_coord(first["block"]), _coord(first["thread"])), (_coord(second["block"]), _coord(second["thread"]))]
    n, elem_bytes = _shape(problem, first["line"])
    unit = problem.buffers[buffer].elem_bytes if buffer in problem.buffers else elem_bytes   # (shared: the access's)
    lo = int(w["element_index"]) * unit
    hi = lo + n * elem_bytes
    seen: list[list[tuple[str, int]]] = [[], []]

    def stop(event: Access | Violation) -> bool:
        if not isinstance(event, Access) or event.buffer != buffer or event.space == "local":
            return False
        if event.offset >= hi or event.offset + event.width <= lo:
            return False
        for i, (block, thread) in enumerate(who):
            if (event.block, event.thread) == (block, thread):
                seen[i].append((event.kind, event.phase))
        if _conflict(seen, across):
            return True
        # Across blocks the first block need not run on once its thread has made the access: the second block
        # may be scheduled right then (blocks do not wait for each other), so its threads see that prefix.
        first_done = across and event.block == who[0][0] and any(k == first.get("access") for k, _ in seen[0])
        return END_BLOCK if first_done else False
    across = who[0][0] != who[1][0]
    blocks = list(dict.fromkeys(block for block, _ in who))
    _run(problem, Inputs.of(problem, recorded_inputs(w)), blocks, stop, first=[who[0][1], who[1][1]])
    if not _conflict(seen, across):
        raise NotReproduced(f"block {first['block']} thread {first['thread']} and block {second['block']} thread "
                            f"{second['thread']} do not race on {buffer}[{w['element_index']}] (their accesses "
                            f"there: {seen[0]} and {seen[1]})")
    return f"the two threads' accesses to {buffer}[{w['element_index']}] conflict: {seen[0]} and {seen[1]}"


def _conflict(seen: list[list[tuple[str, int]]], across_blocks: bool) -> bool:
    for kind_a, phase_a in seen[0]:
        for kind_b, phase_b in seen[1]:
            kinds = {kind_a, kind_b}
            if kinds & {"store", "atomic"} and kinds != {"atomic"} and (across_blocks or phase_a == phase_b):
                return True
    return False


def _barriers(problem: Problem, w: dict) -> str:
    first, second = w["first"], w["second"]
    block = _coord(first["block"])
    if _coord(second["block"]) != block:
        raise NotReproduced("a barrier divergence names threads of two blocks")
    result = _run(problem, Inputs.of(problem, recorded_inputs(w)), [block])
    a, b = (result.barriers.get((block, _coord(p["thread"]))) for p in (first, second))
    if a is None or b is None or a == b:
        raise NotReproduced(f"threads {first['thread']} and {second['thread']} of block {first['block']} pass the "
                            f"same barriers ({list(a or ())})")
    return f"thread {first['thread']} passes the barriers at lines {list(a)}, thread {second['thread']} {list(b)}"


REPRODUCERS: dict[str, Callable[[Problem, dict], str]] = {
    "equivalence": _equivalence,
    "memory_safety": _memory_safety,
    "race_freedom": _race,
    "barrier_uniformity": _barriers,
}


def reproduce(problem: Problem, finding: Finding, race_free: bool = True) -> tuple[bool, str]:
    """Whether the concrete interpreter shows `finding` at its witness, and what it saw. A wrong value is
    final only if no other block writes the element: `race_free` says race freedom is proved (any write by
    another block would be a race); without it a wrong value does not reproduce."""
    runner = REPRODUCERS.get(finding.prop)
    if runner is None:
        return False, f"{finding.prop} findings are not reproduced"
    if finding.prop == "equivalence" and not race_free and "block" in finding.witness \
            and "other_inputs" not in finding.witness:
        return False, "another block may overwrite the element: race freedom is not proved"
    try:
        return True, runner(problem, finding.witness)
    except NotReproduced as exc:
        return False, str(exc)
    except Unsupported as exc:
        return False, f"the interpreter cannot run it: {exc}"
    except (KeyError, TypeError, ValueError) as exc:
        return False, f"the witness is malformed ({exc!r})"


def confirm(problem: Problem, results: dict[str, PropertyResult]) -> None:
    """Keep only the findings the interpreter reproduces; a violated property left without one is unknown."""
    race_free = results["race_freedom"].state == PROVED
    for result in results.values():
        if result.state != VIOLATED:
            continue
        kept, why = [], []
        for finding in result.findings:
            ok, detail = reproduce(problem, finding, race_free)
            (kept if ok else why).append(finding if ok else detail)
        result.findings = kept
        if not kept:
            result.state = UNKNOWN
            result.reasons.append(f"witness not reproduced by the concrete interpreter: {'; '.join(why)}")
