"""From a bound kernel and its reference to a verdict: the trusted core of `lark verify`.

Runs the symbolic thread, hands each property checker its obligations, and merges property states into
one verdict: any property violated -> refuted (with its witness), else any unknown -> unknown (with every
reason), else verified (each property proved or not applicable). Provers (hint sources) are passed in and
never trusted. A safety-only task (no reference) has equivalence not applicable and checks the other four.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import z3

from lean_pool.checker import UNKNOWN as UNKNOWN_OUTCOME
from lean_pool.checker import Checker, Obligation, Outcome
from semantics import preconditions
from semantics.concrete.reproduce import confirm
from semantics.constants import AXIOM as CONSTANT_AXIOM
from semantics.constants import Identification, identify
from semantics.errors import Unsupported
from semantics.proof import Theorem
from semantics.properties import (
    atomics,
    barriers,
    coverage,
    equivalence,
    loop_barriers,
    loop_shared,
    memory_safety,
    races,
    readbacks,
    registers,
    shared_init,
    shared_values,
    superseded,
    termination,
)
from semantics.properties.common import (
    NOT_APPLICABLE,
    NOT_CHECKED,
    PROPERTIES,
    PROVED,
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    local_constants,
)
from semantics.ptx.ast import Kernel
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.neginf import mentions_neg_inf
from semantics.ptx.state import Precision
from semantics.ptx.symexec import execute
from semantics.terms import larger_than


@dataclass
class Provers:
    """Untrusted hint sources, each called with a key that names what it is asked about, so a certificate
    can record the accepted hints and `lark check` can replay exactly those:
    `inverse(key, index, variables, e)` proposes the writer of output element e;
    `bounds(key, loop)` proposes iteration bounds of a loop;
    `reindex(key, source, source_var, target, target_var)` proposes how a reduction's index maps onto
    another's; `split(key, dividend, divisor)` proposes quotient and remainder of an index division.
    `search(kind, key, args, obligations, timeout_s)`, optional, explores alternative hints for a goal before
    the core asks: given the core's own map from a hint to the obligations that prove it, it returns the
    hints to try (the winner of an untrusted search, orchestrator/search.py). The core checks what it uses
    exactly as it checks any prover's hint; today loop bounds, exact exits and reductions' reindexings φ
    are searched."""

    inverse: Callable
    bounds: Callable
    reindex: Callable
    split: Callable
    search: Callable | None = None


@dataclass
class Report:
    verdict: str
    properties: dict[str, str]
    findings: list[Finding]
    reason: str | None
    axioms: list[str] = field(default_factory=list)
    obligations: list[tuple[Obligation, Outcome]] = field(default_factory=list)
    seconds: float = 0.0
    hints: dict[str, object] = field(default_factory=dict)   # key -> accepted hint (z3 terms)
    # property -> how its top goals were met: {"goals": n, "stated": exactly by a theorem, "rewritten": by a
    # theorem of the form tactics rewrote the goal to} (`established`)
    goals: dict[str, dict[str, int]] = field(default_factory=dict)
    # What the passes produced, for `lark verify --show` (never serialised, never part of the verdict): the
    # symbolic thread's accesses, the top goals per property, the theorems each property's checks made, and
    # how each goal stands (`standings`).
    accesses: list = field(default_factory=list)
    expected: dict[str, list] = field(default_factory=dict)
    theorems: dict[str, list[Theorem]] = field(default_factory=dict)
    standings: dict[str, list[tuple[str, str]]] = field(default_factory=dict)   # property -> (goal, how it stands)


@dataclass
class Problem:
    """Everything the core needs, already bound: no files, no compilers, no torch."""

    kernel: Kernel
    launch: Launch
    buffers: dict[str, Buffer]
    args: list[object]                                    # per kernel parameter: Buffer, literal or z3 term
    references: dict[str, Callable] | None               # output buffer -> element function
    reference_problem: str | None = None                 # why references is None
    shared_symbols: set[str] = field(default_factory=set)
    source_files: dict[int, str] = field(default_factory=dict)  # PTX `.file` index -> source path
    language: str = "ptx"                                # cuda | triton | ptx: how witnesses name blocks
    precision: Precision = field(default_factory=Precision)  # how far float conversions may narrow
    safety_only: bool = False                            # no reference: equivalence is not applicable
    constants: dict[int, str] = field(default_factory=dict)  # the reference's float32 constants: bits -> name
    exact_constants: bool = False                        # --exact-constants: no literal is identified with one


class FiniteOnly:
    """A checker that never hands a solver an obligation holding the -inf padding marker: the marker is not a
    real, so a proof or a model that treats it as one means nothing (`semantics.ptx.neginf` keeps it in
    registers; this is the wall behind that)."""

    def __init__(self, inner: Checker):
        self.inner = inner
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        if mentions_neg_inf(obligation.formula):
            return Outcome(UNKNOWN_OUTCOME, self.name, 0.0, reason="-inf (a masked lane's padding) is not a real")
        return self.inner.check(obligation, timeout_s)


class WithSizes:
    """A checker that asks every model for the values of the launch's symbolic scalars too, so a refutation of
    a task proved for a range of sizes names the size that exposes it (`scalar.n` in the witness)."""

    def __init__(self, inner, scalars: tuple):
        self.inner = inner
        self.name = inner.name
        self.terms = {str(s.symbol): s.symbol for s in scalars}

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        asked = replace(obligation, witness={**obligation.witness, **self.terms})
        return self.inner.check(asked, timeout_s)


# Every step of equivalence walks the stored values; past this many distinct subterms each walk takes minutes
# and no comparison would finish, so the property is `unknown` at once (like MAX_PATHS in symexec).
MAX_STORED_NODES = 1_000_000


def merge(results: dict[str, PropertyResult]) -> tuple[str, str | None]:
    """The verdict of the property states; `not_applicable` holds like `proved` (it is never violated)."""
    states = {p: r.state for p, r in results.items()}
    if VIOLATED in states.values():
        return "refuted", None
    reasons = [reason for r in results.values() for reason in r.reasons]
    if UNKNOWN in states.values() or NOT_CHECKED in states.values():
        return "unknown", "; ".join(reasons) or "not every property was checked"
    return "verified", None


def verify(problem: Problem, checker: Checker, provers: Provers, timeout_s: float = 600.0,
           progress: Callable[[str], None] | None = None) -> Report:
    """Decide the problem's properties, every obligation resting on its inputs' stated preconditions."""
    ranges = {b.contents().name(): b.values for b in problem.buffers.values() if b.values}
    with preconditions.stated(ranges):
        return _decide(problem, checker, provers, timeout_s, progress)


def _decide(problem: Problem, checker: Checker, provers: Provers, timeout_s: float,
            progress: Callable[[str], None] | None) -> Report:
    start = time.monotonic()
    checker = FiniteOnly(checker)
    if problem.launch.scalars:
        checker = WithSizes(checker, problem.launch.scalars)
    log: list[tuple[Obligation, Outcome]] = []
    hints: dict[str, object] = {}

    def record(ob: Obligation, outcome: Outcome) -> None:
        log.append((ob, outcome))
    note = progress or (lambda _msg: None)

    def per_obligation() -> float:
        return max(min(timeout_s - (time.monotonic() - start), 120.0), 1.0)

    results = {p: PropertyResult() for p in PROPERTIES}
    problem, identified = _identify_constants(problem)
    try:
        note("symbolic execution")
        ctx, effects = _execute(problem, checker, provers, per_obligation, record, hints)
        if identified and not problem.exact_constants:
            ctx.axioms.update([CONSTANT_AXIOM, *(m.axiom for m in identified)])
        written = _written_inputs(ctx.accesses, problem.buffers) if problem.safety_only else set()
        if written:   # a declared buffer the kernel writes: its reads see the writes (role scratch), run again
            buffers = {n: replace(b, role="scratch") if n in written else b for n, b in problem.buffers.items()}
            problem = replace(problem, buffers=buffers)
            ctx, effects = _execute(problem, checker, provers, per_obligation, record, hints)
    except Unsupported as exc:
        reason = f"unsupported: {exc}{_source_suffix(exc.where, problem)}"
        for r in results.values():
            r.downgrade(UNKNOWN, reason)
        return Report("unknown", _all_unknown(problem), [], reason, seconds=time.monotonic() - start)

    thread, launch = ctx.thread, problem.launch
    diverged = barriers.warp_uniform(ctx.warp_uniform, thread, launch, problem.shared_symbols, checker,
                                     per_obligation(), record)
    if diverged:
        reason = f"a warp-synchronous exchange may run in a partially converged warp ({diverged[0]})"
        return Report("unknown", _all_unknown(problem), [], reason, sorted(ctx.axioms), log,
                      time.monotonic() - start, hints)
    assumptions = z3.And(ctx.assumptions) if ctx.assumptions else z3.BoolVal(True)
    launch_ok = z3.And(thread.in_launch(launch), assumptions)
    accesses = ctx.accesses

    note("termination")
    results["termination"], bounds = termination.check(effects.loops,
                                                       _bounds(provers, thread, launch, False, per_obligation()),
                                                       thread, launch, checker, per_obligation(), record, hints)
    effects.resolve_loops(bounds)
    note("values through shared memory")
    loop_shared.resolve(ctx, thread, launch, problem.shared_symbols, provers.inverse, checker, per_obligation(),
                        record, hints)
    shared_values.resolve(ctx, thread, launch, problem.shared_symbols, provers.inverse, checker, per_obligation(),
                          record, hints)
    readbacks.resolve(ctx, thread, launch, problem.shared_symbols, checker, per_obligation(), record)
    note("memory safety")
    results["memory_safety"] = memory_safety.check(accesses, ctx.buffers, thread, launch_ok, checker,
                                                   per_obligation(), record)
    if results["memory_safety"].state != VIOLATED:
        results["memory_safety"].merge(registers.check(ctx.undefined_reads, thread, launch_ok, checker,
                                                       per_obligation(), record))
    if results["memory_safety"].state != VIOLATED:
        initialized = shared_init.check(accesses, thread, launch, problem.shared_symbols, provers.inverse, checker,
                                        per_obligation(), record, hints, ctx.loop_initialized)
        results["memory_safety"].merge(initialized)
    note("race freedom")
    results["race_freedom"] = races.check(accesses, {n: b.elem_bytes for n, b in ctx.buffers.items()},
                                          thread, launch, problem.shared_symbols, checker, per_obligation(), record)
    note("barrier uniformity")
    results["barrier_uniformity"] = barriers.check(ctx.barrier_paths, thread, launch, problem.shared_symbols,
                                                   checker, per_obligation(), record)
    if results["barrier_uniformity"].state != VIOLATED:   # loops with barriers inside: equal trip counts
        results["barrier_uniformity"].merge(loop_barriers.check(effects.loops, thread, launch, problem.shared_symbols,
                                                                checker, per_obligation(), record))
    note("equivalence")
    expected = {"memory_safety": memory_safety.goals(accesses, ctx.buffers, thread, launch_ok),
                "race_freedom": races.goals(accesses, thread, launch, problem.shared_symbols),
                "barrier_uniformity": barriers.goals(ctx.barrier_paths, thread, launch, problem.shared_symbols),
                "equivalence": []}
    if problem.safety_only:
        results["equivalence"] = PropertyResult(NOT_APPLICABLE)
    else:
        results["equivalence"] = _equivalence(problem, accesses, ctx.opaque, provers, thread, launch, launch_ok,
                                              checker, per_obligation(), record, hints, expected["equivalence"])
    if not problem.safety_only and ctx.assumes_initialized and results["memory_safety"].state != PROVED:
        results["equivalence"] = PropertyResult(UNKNOWN, ["the values read from shared memory assume every shared "
                                                          "read is initialised, which is not proved"])
    goals = established(results, expected)
    standing = {p: standings(results[p], g) for p, g in expected.items()}   # for `--show goals`
    note("reproducing refutations")
    confirm(problem, results)   # on the concrete interpreter: a finding it does not show is dropped (unknown)
    if problem.exact_constants and identified and results["equivalence"].state in (VIOLATED, UNKNOWN):
        results["equivalence"] = _near_constants(identified, results["equivalence"])
    verdict, reason = merge(results)
    findings = [f for r in results.values() for f in r.findings]
    for finding in findings:
        locate(finding, problem.kernel, problem.source_files, problem.language)
        name_sizes(finding, problem.launch)
    return Report(verdict, {p: r.state for p, r in results.items()}, findings, reason, sorted(ctx.axioms), log,
                  time.monotonic() - start, hints, goals, accesses, expected,
                  {p: list(r.theorems) for p, r in results.items()}, standing)


Goals = list[tuple[str, z3.BoolRef | tuple[z3.BoolRef, ...] | None]]   # (what, accepted statement(s))


def accepted_forms(forms: z3.BoolRef | tuple[z3.BoolRef, ...] | None) -> tuple[z3.BoolRef, ...]:
    """A goal's accepted statements as a tuple (`Goals`: one, several, or None for none)."""
    return () if forms is None else (forms,) if isinstance(forms, z3.ExprRef) else tuple(forms)


def standings(result: PropertyResult, goals: Goals) -> list[tuple[str, str]]:
    """Each top goal of a property and how it stands: `stated` exactly by a theorem of the kernel without
    hypotheses (one of its accepted forms), `rewritten` (an equivalence lane whose sides tactics rewrote,
    stated in the rewritten form: the part not yet composed by kernel rules), else `open`, or `no form`
    where the checks gave no statement to prove (never established)."""
    stated = {t.conclusion.get_id() for t in result.theorems if not t.hypotheses}
    found = []
    for what, forms in goals:
        forms = accepted_forms(forms)
        if any(f.get_id() in stated for f in forms):
            found.append((what, "stated"))
        elif any(_rewrites(f, result.rewritten.get(f.get_id())) for f in forms):
            found.append((what, "rewritten"))
        else:
            found.append((what, "open" if forms else "no form"))
    return found


def established(results: dict[str, PropertyResult], expected: dict[str, Goals]) -> dict[str, dict[str, int]]:
    """A property is `proved` only where every one of its top goals is `stated` or `rewritten` (`standings`);
    otherwise it becomes `unknown`, naming the first goal that is not. Returns, per proved property, how
    many goals there were and how each was met, up to the first that was not."""
    counts = {}
    for prop, goals in expected.items():
        result = results[prop]
        if result.state != PROVED:
            continue
        stand = standings(result, goals)
        unmet = next((k for k, (_, how) in enumerate(stand) if how not in ("stated", "rewritten")), len(stand))
        met = [how for _, how in stand[:unmet]]
        counts[prop] = {"goals": len(goals), "stated": met.count("stated"), "rewritten": met.count("rewritten")}
        if unmet < len(stand):
            result.downgrade(UNKNOWN, f"no kernel theorem states the goal of {stand[unmet][0]}")
    return counts


def _comparison(statement: z3.BoolRef) -> z3.BoolRef | None:
    """h of a statement ¬(h ∧ a ≠ b), else None."""
    if z3.is_not(statement) and z3.is_and(statement.arg(0)) and statement.arg(0).num_args() == 2 \
            and z3.is_distinct(statement.arg(0).arg(1)):
        return statement.arg(0).arg(0)
    return None


def _rewrites(goal: z3.BoolRef, theorem: Theorem | None) -> bool:
    """Whether an unconditional theorem compares, under the goal's own hypothesis, what tactics rewrote the
    goal's two sides to: ¬(h ∧ a' ≠ b') for the goal ¬(h ∧ a ≠ b)."""
    if theorem is None or theorem.hypotheses:
        return False
    h, h2 = _comparison(goal), _comparison(theorem.conclusion)
    return h is not None and h2 is not None and h.eq(h2)


def _identify_constants(problem: Problem) -> tuple[Problem, list[Identification]]:
    """The problem with every kernel literal within 2 ulps of a reference constant taken as that constant
    (axiom float.constant, each instance listed), and the identifications; under --exact-constants the
    kernel is unchanged and the identifications are only those that would have been made."""
    kernel, identified = identify(problem.kernel, problem.constants)
    if problem.exact_constants or not identified:
        return problem, identified
    return replace(problem, kernel=kernel), identified


def _near_constants(identified: list[Identification], found: PropertyResult) -> PropertyResult:
    """Under --exact-constants, equivalence not proved in a kernel whose literals differ from reference
    constants by rounding: never a bare refutation, since those literals alone may be the whole difference.
    The result is unknown, naming the literals, then whatever else was found (a finding is dropped)."""
    near = ", ".join(f"0x{m.literal:08X} is within 2 ulps of {m.name} (0x{m.constant:08X})" for m in identified)
    return PropertyResult(UNKNOWN, [f"--exact-constants, and the kernel's constant {near}: a wrong value may be "
                                    "that rounding alone (without --exact-constants the literal is taken as the "
                                    f"constant, axiom {CONSTANT_AXIOM})", *found.reasons])


def _all_unknown(problem: Problem) -> dict[str, str]:
    """Every property undecided (but equivalence of a safety-only task, which is never asked)."""
    return {p: NOT_APPLICABLE if p == "equivalence" and problem.safety_only else UNKNOWN for p in PROPERTIES}


def _execute(problem: Problem, checker, provers: Provers, per_obligation: Callable[[], float], record,
             hints: dict):
    """Bind the launch and run the symbolic thread: the context (accesses, assumptions, ...) and effects."""
    ctx = bind(problem.kernel, problem.launch, problem.args, problem.buffers, problem.precision)
    if any(b.is_float for b in problem.buffers.values()):
        ctx.axioms.add("float.reals")   # the axiom every float verdict rests on (DESIGN §3)
    ctx.axioms.update(preconditions.describe(b.name, *b.values) for b in problem.buffers.values() if b.values)

    def exit_oracle(loop, key: str):
        return termination.exact_exit(loop, key, _bounds(provers, ctx.thread, problem.launch, True,
                                                         per_obligation()),
                                      ctx.thread, problem.launch, checker, per_obligation(), record, hints)

    return ctx, execute(problem.kernel, ctx, exit_oracle)


def _written_inputs(accesses, buffers: dict[str, Buffer]) -> set[str]:
    """Global buffers bound as inputs (reads see their initial contents only) that the kernel stores to."""
    return {a.buffer for a in accesses if a.kind != "load" and a.space == "global"
            and buffers[a.buffer].role == "input"}


def name_sizes(finding: Finding, launch: Launch) -> None:
    """Lift the symbolic scalars' values out of a witness's model (`WithSizes`) into `witness['sizes']` and the
    message: the size at which the refutation happens."""
    if not launch.scalars:
        return
    parts = [finding.witness, *(v for v in finding.witness.values() if isinstance(v, dict))]
    sizes = {}
    for part in parts:
        sizes.update(part.pop("scalars", {}))
    if sizes:
        finding.witness["sizes"] = sizes
        finding.message += " with " + ", ".join(f"{n} = {v}" for n, v in sizes.items())


def _bounds(provers: Provers, thread, launch: Launch, exact: bool, timeout_s: float) -> Callable:
    """The source of candidate loop bounds: the prover's list, or, with a search, the searched winner. Either
    way the obligations come from `termination` and the core checks them itself."""
    if provers.search is None:
        return provers.bounds

    def searched(key: str, loop) -> list:
        def obligations(bound) -> list[Obligation]:
            exits = termination.obligation(loop, bound, thread, launch)
            return [exits, termination.stays_before(loop, bound, thread, launch)] if exact else [exits]
        return provers.search("bounds", key, (loop,), obligations, timeout_s)
    return searched


def source_lines(kernel: Kernel, files: dict[int, str]) -> dict[int, str]:
    """PTX line -> `file:line` of the source it came from (the PTX's .loc directives)."""
    return {ins.line: f"{Path(files[ins.loc[0]]).name}:{ins.loc[1]}" for ins in kernel.body
            if getattr(ins, "loc", None) and ins.loc[0] in files}


def _source_suffix(where: str | None, problem: Problem) -> str:
    """` [kernel.cu:12]` for an Unsupported located at a PTX line that has a source line, else ''."""
    if not where or not where.startswith("line ") or not where[5:].isdigit():
        return ""
    source = source_lines(problem.kernel, problem.source_files).get(int(where[5:]))
    return f" [{source}]" if source else ""


def locate(finding: Finding, kernel: Kernel, files: dict[int, str], language: str = "ptx") -> None:
    """Add the source line (from the PTX's .loc directives) to every witness part that names a PTX line, and,
    for Triton, the program id (Triton's name for the block index)."""
    lines = source_lines(kernel, files)

    def visit(part: dict) -> None:
        source = lines.get(part.get("line"))
        if source:
            part["source"] = source
        if language == "triton" and "block" in part:
            part["program_id"] = part["block"]
        for value in part.values():
            if isinstance(value, dict):
                visit(value)

    visit(finding.witness)
    source = finding.witness.get("source") or finding.witness.get("first", {}).get("source")
    if source:
        finding.message += f" [{source}]"


def _opaque_reason(outputs: list, opaque: dict[str, str]) -> str | None:
    """Why an output's value is not modelled, if it depends on a value from other threads."""
    for access in outputs:
        names = {str(c) for v in access.values for c in local_constants(v, set())}
        for name in sorted(names & opaque.keys()):
            return opaque[name]
    return None


def _equivalence(problem: Problem, accesses, opaque, provers, thread, launch, launch_ok, checker, timeout_s,
                 record, hints: dict, goals: Goals) -> PropertyResult:
    """The equivalence result; `goals` receives its top goals: each lane of each store to a plainly written
    output (but the lanes proved superseded) equals the reference, and each such output is covered."""
    if problem.references is None:
        return PropertyResult(UNKNOWN, [f"reference not modelled: {problem.reference_problem}"])
    stores = [a for a in accesses if a.kind != "load" and a.space == "global"]
    strays = [a for a in stores if problem.buffers[a.buffer].role == "input"]
    if strays:
        return PropertyResult(UNKNOWN, [f"the kernel writes input buffer {strays[0].buffer} (line {strays[0].line});"
                                        f" in-place updates are not modelled"])
    outputs = [a for a in stores if problem.buffers[a.buffer].role == "output"]
    summed = atomics.accumulated(outputs)
    stored = [a for a in outputs if a.buffer not in summed]
    if larger_than([v for a in outputs for v in a.values], MAX_STORED_NODES):
        return PropertyResult(UNKNOWN, [f"the stored values have more than {MAX_STORED_NODES} distinct subterms "
                                        f"(values of every lane of a block, e.g. a reduction nested in the "
                                        f"body of another across threads): too large to compare"])
    why = _opaque_reason(outputs, opaque)
    if why:
        return PropertyResult(UNKNOWN, [why])
    overwritten = superseded.find(stored, problem.buffers, provers.inverse, thread, launch, launch_ok, checker,
                                  timeout_s, record, hints)
    values = equivalence.check(stored, problem.buffers, problem.references, thread, launch_ok, checker,
                               timeout_s, record, provers, hints, frozenset(problem.shared_symbols), overwritten)
    for a in stored:     # listed before a violation returns too, so `--show goals` names the refuted lane
        for j in range(len(a.values)):
            if (id(a), j) not in overwritten:
                stated = values.goals.get((id(a), j))
                ok = stated is not None and equivalence.is_goal(stated, a, j, problem.buffers[a.buffer], launch_ok)
                goals.append((equivalence.lane_name(a.buffer, j, a.line), stated if ok else None))
    if values.state == VIOLATED:
        return values
    for name in sorted(summed):
        values.merge(atomics.check(problem.buffers[name], [a for a in outputs if a.buffer == name],
                                   problem.references[name], thread, launch, launch_ok, problem.shared_symbols,
                                   provers, checker, timeout_s, record, hints))
    plain = {n: b for n, b in problem.buffers.items() if n not in summed}
    covered = coverage.check(plain, stored, provers.inverse, thread, launch, checker, timeout_s, record, hints)
    if covered.state == VIOLATED:
        return covered
    values.downgrade(covered.state)
    values.reasons.extend(covered.reasons)
    values.theorems += covered.theorems
    goals += coverage.goals(plain, stored, thread, launch, hints)
    return values
