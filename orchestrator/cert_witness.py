"""`lark check` for witnesses: a refutation replays on the semantics, apart from the search that found it.

First, and required, every finding is reproduced on the concrete interpreter (`semantics/concrete`, written
apart from the symbolic executor): the witness's block(s) run on its inputs and must show the violation
(`semantics.concrete.reproduce`). Then it is replayed symbolically as below, where that applies (barrier
divergence and a shared read of unwritten memory have no symbolic replay: the interpreter's run is their check).

The task is re-derived (same identity checks as a certificate) and its accesses recomputed by the trusted
semantics, executed as `verify` executes it (mirrored in `site`): loop exits and shared-memory writers come
from the recorded hints, each proved again before it is used. Each finding is then replayed with the
obligation the verifier itself builds for that access, the witness's concrete values substituted in:
* memory_safety: the thread (and loop iterations) performs the access at the recorded byte offset and it
  is out of bounds or misaligned (the obligation is satisfiable), and those iterations are really reached;
* race_freedom: the two threads' accesses overlap while concurrent (the race obligation is satisfiable),
  both reached;
* equivalence, a wrong value: the thread stores that element, and the kernel's value and the reference's,
  evaluated on real numbers (`semantics.replay.Evaluator`) at the witness's inputs, differ and are the
  recorded values;
* equivalence, an element never written: no thread can write it (that query is unsat);
* equivalence of an atomic accumulation (a one-hot witness: one input element 1, the rest 0): the number of
  instances adding that element, and of reference terms reading it, recounted exactly, give the recorded values.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import z3

from lean_pool.checker import PROVED, REFUTED, Obligation, Outcome, Z3Checker
from orchestrator.cert_identity import Rejected, rederive
from orchestrator.cert_schema import Witness
from orchestrator.cert_terms import BadHint, hint_from_json, replay_provers
from semantics.concrete.reproduce import reproduce
from semantics.errors import Unsupported
from semantics.properties import (
    atomics,
    coverage,
    equivalence,
    loop_shared,
    memory_safety,
    races,
    readbacks,
    shared_values,
    termination,
)
from semantics.properties.common import Finding, escape, thread_witness
from semantics.properties.reductions import innermost
from semantics.ptx.bind import bind
from semantics.ptx.machine import AXES, Buffer, Launch, Thread
from semantics.ptx.state import Access
from semantics.ptx.symexec import execute
from semantics.replay import Evaluator, NotConcrete, differ
from semantics.verdict import Problem

TIMEOUT_S = 120.0
TOLERANCE = 1e-6          # recorded values are JSON floats, the replayed ones exact
_INPUT = re.compile(r"(.+)\[(\d+|\*)\]")   # name[*]: every element not listed (a sparse replay's default)


class NotReproduced(Exception):
    """This finding does not replay; the message says which part fails."""


@dataclass
class Site:
    """The re-derived kernel as the property checks see it: one symbolic thread and its accesses."""

    problem: Problem
    thread: Thread
    launch: Launch
    launch_ok: z3.BoolRef
    accesses: list[Access]
    buffers: dict[str, Buffer]

    def accesses_at(self, kind: str, buffer: str, line: int) -> list[Access]:
        found = [a for a in self.accesses if (a.kind, a.buffer, a.line) == (kind, buffer, line)]
        if not found:
            raise NotReproduced(f"the kernel has no {kind} of {buffer} at line {line}")
        return found


def site(problem: Problem, hints: dict[str, object]) -> Site:
    """Bind, execute and resolve shared-memory values as `verify` does, every hint proved again before use.
    Reach guards get no iteration bound (a sound over-approximation); a witness's iterations are checked
    exactly by `_reached`."""
    ctx = bind(problem.kernel, problem.launch, problem.args, problem.buffers, problem.precision)
    provers = replay_provers(hints.get)

    def ignore(_ob: Obligation, _outcome: Outcome) -> None:
        return None

    def exit_oracle(loop, key: str) -> z3.BitVecRef | None:
        return termination.exact_exit(loop, key, provers.bounds, ctx.thread, problem.launch, Z3Checker(),
                                      TIMEOUT_S, ignore, {})

    execute(problem.kernel, ctx, exit_oracle).resolve_loops({})
    shared_values.resolve(ctx, ctx.thread, problem.launch, problem.shared_symbols, provers.inverse, Z3Checker(),
                          TIMEOUT_S, ignore, {})
    loop_shared.resolve(ctx, ctx.thread, problem.launch, problem.shared_symbols, provers.inverse, Z3Checker(),
                        TIMEOUT_S, ignore, {})
    readbacks.resolve(ctx, ctx.thread, problem.launch, problem.shared_symbols, Z3Checker(), TIMEOUT_S, ignore)
    launch_ok = z3.And(ctx.thread.in_launch(problem.launch), *ctx.assumptions)
    return Site(problem, ctx.thread, problem.launch, launch_ok, ctx.accesses, ctx.buffers)


def _decide(formula: z3.BoolRef) -> Outcome:
    return Z3Checker().check(Obligation("witness replay", "witness", formula), TIMEOUT_S)


def _values(shaped: dict, suffix: str = "") -> dict[str, int]:
    """A witness's thread as the names `thread_witness` gives its terms (the inverse of `shaped_thread`)."""
    values = {f"{kind}{suffix}.{axis}": shaped[key][i]
              for kind, key in (("block", "block"), ("thread", "thread")) for i, axis in enumerate(AXES)}
    values.update({f"iteration{suffix}@{k.split('@', 1)[1]}": v for k, v in shaped.items()
                   if k.startswith("iteration@")})
    return values


def _fixes(terms: dict[str, z3.ExprRef], values: dict[str, int]) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """(term, concrete value) for every thread coordinate and loop iteration among an obligation's terms."""
    fixes = []
    for name, term in terms.items():
        if name.startswith(("block", "thread", "iteration")):
            if name not in values:
                raise NotReproduced(f"the witness gives no value for {name}")
            fixes.append((term, z3.BitVecVal(values[name], term.size())))
    return fixes


def _reached(s: Site, access: Access, values: dict[str, int], suffix: str = "") -> bool:
    """The witness's iterations of every loop around `access` are really reached (no earlier exit)."""
    originals = thread_witness(s.thread, access.loops)
    named = thread_witness(s.thread, access.loops, suffix)
    fixes = [(t, z3.BitVecVal(values[name], t.size())) for t, name in zip(originals.values(), named, strict=True)]
    return _decide(escape(access.loops, fixes)).status == PROVED


def _memory_safety(s: Site, w: dict) -> None:
    values = _values(w)
    for access in s.accesses_at(w["access"], w["buffer"], w["line"]):
        ob = memory_safety.obligation(access, s.buffers[w["buffer"]], s.thread, s.launch_ok)
        fixes = _fixes(ob.witness, values)
        at_offset = z3.substitute(ob.witness["offset"], *fixes) == w["byte_offset"] % (1 << 64)
        if _decide(z3.And(z3.substitute(ob.formula, *fixes), at_offset)).status == REFUTED \
                and _reached(s, access, values):
            return
    raise NotReproduced(f"block {w['block']} thread {w['thread']} does not {w['access']} {w['buffer']} out of "
                        f"bounds or misaligned at byte offset {w['byte_offset']} (line {w['line']})")


def _race(s: Site, w: dict) -> None:
    first, second = w["first"], w["second"]
    values = _values(first) | _values(second, "'")
    for a in s.accesses_at(first["access"], w["buffer"], first["line"]):
        for b in s.accesses_at(second["access"], w["buffer"], second["line"]):
            ob = races.obligation(a, b, s.thread, s.launch, s.problem.shared_symbols)
            if _decide(z3.substitute(ob.formula, *_fixes(ob.witness, values))).status == REFUTED \
                    and _reached(s, a, values) and _reached(s, b, values, "'"):
                return
    raise NotReproduced(f"block {first['block']} thread {first['thread']} (line {first['line']}) and block "
                        f"{second['block']} thread {second['thread']} (line {second['line']}) do not race on "
                        f"{w['buffer']}")


def _inputs(s: Site, recorded: dict[str, float]) -> dict[tuple[str, int | None], Fraction]:
    inputs = {}
    for key, value in recorded.items():
        match = _INPUT.fullmatch(key)
        if match is None or match.group(1) not in s.buffers:
            raise NotReproduced(f"input {key!r} names no buffer element")
        index = None if match.group(2) == "*" else int(match.group(2))
        inputs[(match.group(1), index)] = Fraction(value)
    return inputs


def _pin(buffer: Buffer, index: int, value: Fraction) -> z3.BoolRef:
    element = buffer.contents()(z3.BitVecVal(index, 64))
    return element == (z3.RealVal(value) if buffer.is_float else z3.BitVecVal(int(value), buffer.elem_bytes * 8))


def _close(value: object, recorded: float) -> bool:
    return abs(float(value) - recorded) <= TOLERANCE * max(1.0, abs(recorded))


def _wrong_value(s: Site, w: dict) -> None:
    values, buffer = _values(w), s.buffers[w["buffer"]]
    inputs = _inputs(s, w["inputs"])
    pins = [_pin(s.buffers[name], index, v) for (name, index), v in inputs.items() if index is not None]
    for access in s.accesses_at("store", w["buffer"], w["line"]):
        for j in range(len(access.values)):
            ob, compared = equivalence.obligation(access, j, buffer, s.problem.references[buffer.name], s.thread,
                                                  s.launch_ok)
            value, expected = compared.kernel, compared.reference
            fixes = _fixes(ob.witness, values)
            at_element = z3.substitute(ob.witness["element_index"], *fixes) == w["element_index"]
            if innermost(value) or innermost(expected):
                # uninterpreted reductions leave the solver no answer on the difference; a model of the
                # storing thread is enough, as the two values are then computed from the recorded inputs
                index = equivalence.element_index(access, j)
                stores = z3.And(s.launch_ok, access.guard, z3.ULT(index, buffer.numel))
                outcome = _decide(z3.And(z3.substitute(stores, *fixes), at_element))
            else:
                outcome = _decide(z3.And(z3.substitute(ob.formula, *fixes), at_element, *pins))
            if outcome.status != REFUTED or not _reached(s, access, values):
                continue
            evaluator = Evaluator(outcome.z3_model, dict(inputs))
            try:
                got, want = (evaluator.value(z3.substitute(t, *fixes)) for t in (value, expected))
            except NotConcrete:
                continue
            if differ(got, want) and _close(got, w["kernel_value"]) and _close(want, w["reference_value"]):
                return
    raise NotReproduced(f"{w['buffer']}[{w['element_index']}] as stored by block {w['block']} thread "
                        f"{w['thread']} (line {w['line']}) does not evaluate to {w['kernel_value']} against the "
                        f"reference's {w['reference_value']} at the recorded inputs")


def _never_written(s: Site, w: dict) -> None:
    buffer, element = s.buffers[w["buffer"]], w["element_index"]
    stores = [a for a in s.accesses if a.kind != "load" and a.buffer == buffer.name]
    ob = coverage.never_written(buffer, stores, element, s.thread, s.launch)
    if not 0 <= element < buffer.numel or _decide(ob.formula).status != PROVED:
        raise NotReproduced(f"{buffer.name}[{element}] is not shown to be left unwritten")


def _one_hot_sum(s: Site, w: dict) -> None:
    buffer = s.buffers[w["buffer"]]
    ((name, p), _), = _inputs(s, w["inputs"]).items()
    summed = [a for a in s.accesses if a.buffer == buffer.name and a.kind != "load"]
    values = atomics.recompute(buffer, summed, s.problem.references[buffer.name], s.thread, s.launch_ok,
                               w["element_index"], p)
    if values is None or values[0] == values[1] or not _close(values[0], w["kernel_value"]) \
            or not _close(values[1], w["reference_value"]):
        raise NotReproduced(f"with {name}[{p}] = 1 and every other input 0, the atomics into {buffer.name} do not "
                            f"leave {w['kernel_value']} against the reference's {w['reference_value']}")


def _equivalence(s: Site, w: dict) -> None:
    if "other_inputs" in w:
        _one_hot_sum(s, w)
    else:
        (_wrong_value if "block" in w else _never_written)(s, w)


REPLAYS: dict[str, Callable[[Site, dict], None]] = {
    "memory_safety": _memory_safety,
    "race_freedom": _race,
    "equivalence": _equivalence,
}


def replay_witness(witness: Witness, path: Path) -> str:
    """A one-line summary when every finding reproduces; raises Rejected naming each one that does not."""
    prepared = rederive(witness, path)
    try:
        s = site(prepared.problem, {key: hint_from_json(key, h) for key, h in witness.hints.items()})
    except (Unsupported, BadHint, z3.Z3Exception) as exc:
        raise Rejected([f"the kernel cannot be executed with the witness's hints: {exc}"]) from None
    problems = []
    for finding in witness.findings:
        try:
            # (a wrong value's block is taken as its element's only writer, as the verifier proved race freedom)
            concrete, detail = reproduce(prepared.problem, Finding(finding.property, "", finding.witness))
            if not concrete:
                raise NotReproduced(f"the concrete interpreter does not show it: {detail}")
            if finding.property not in REPLAYS or \
                    (finding.property == "memory_safety" and "byte_offset" not in finding.witness):
                continue   # barrier divergence, an unwritten shared read: the interpreter's run is their check
            REPLAYS[finding.property](s, finding.witness)
        except NotReproduced as exc:
            problems.append(f"{finding.property} witness does not reproduce: {exc}")
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"{finding.property} witness is malformed: {exc!r}")
    if problems or not witness.findings:
        raise Rejected(problems or ["the witness file holds no finding"])
    return f"witness reproduces: {prepared.task.name}, {len(witness.findings)} finding(s) replayed"
