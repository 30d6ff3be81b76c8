"""From a bound task to the state of each property: the trusted core shared by `lark verify` and `lark check`.

Runs the symbolic thread, states every property's top goals and decides the side conditions the derivation of those
goals rests on (exact loop exits and bounds, what shared reads and outputs read back see, stores overwritten later,
defined registers, warp convergence, loop barriers, online sums' steps). It imports no tactic: the proof search for
the goals is handed in (`Tactics`, from `semantics.verdict`), and without it (`lark check`) each goal counts as met
exactly when a theorem replayed from a certificate states it (`semantics.checkers.Known`). Side conditions are
asked of a checker that, in `verify`, proves them through the kernel and keeps the theorems
(`semantics.checkers.Through`) and, in `check`, answers them from the same replayed theorems. Either way a property
is `proved` only where kernel theorems without hypotheses state its top goals (`semantics.goals.established`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import z3

from lean_pool.checker import Checker, Obligation, Outcome
from semantics import preconditions
from semantics.checkers import FiniteOnly, Known, Through, WithSizes
from semantics.constants import AXIOM as CONSTANT_AXIOM
from semantics.constants import Identification, identify
from semantics.errors import Unsupported
from semantics.goals import Goals, accepted_forms, established, identity, standings
from semantics.problem import Problem, Provers
from semantics.proof import Theorem
from semantics.properties import (
    barriers,
    coverage,
    lanes,
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
    PROPERTIES,
    PROVED,
    UNKNOWN,
    VIOLATED,
    PropertyResult,
    local_constants,
)
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer
from semantics.ptx.symexec import execute
from semantics.sources import source_lines
from semantics.terms import larger_than

# Every step of equivalence walks the stored values; past this many distinct subterms each walk takes minutes
# and no comparison would finish, so the property is `unknown` at once (like MAX_PATHS in symexec).
MAX_STORED_NODES = 1_000_000


@dataclass
class Tactics:
    """The untrusted proof search for the goals of the properties whose proofs tactics find (`lark verify`).
    Each returns a `PropertyResult` whose theorems are meant to state the goals; only `established` decides
    whether they do. Arguments as `semantics.verdict` passes them."""

    memory_safety: Callable[..., PropertyResult]
    race_freedom: Callable[..., PropertyResult]
    barrier_uniformity: Callable[..., PropertyResult]
    equivalence: Callable[..., PropertyResult]
    atomics: Callable[..., PropertyResult]
    coverage: Callable[..., PropertyResult]
    equation: Callable[[z3.ExprRef, z3.ExprRef, str], Theorem | None]   # ⊢ lhs = rhs of an online sum's step


@dataclass
class Decision:
    """What `decide` found: each property's result (refutations not yet confirmed), its top goals, how they
    stand, and what was made on the way."""

    problem: Problem
    results: dict[str, PropertyResult]
    reason: str | None = None                       # set when the derivation itself stopped (all unknown)
    axioms: set[str] = field(default_factory=set)
    obligations: list[tuple[Obligation, Outcome]] = field(default_factory=list)
    hints: dict[str, object] = field(default_factory=dict)
    expected: dict[str, Goals] = field(default_factory=dict)
    goals: dict[str, dict[str, int]] = field(default_factory=dict)
    standings: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    facts: list[Theorem] = field(default_factory=list)
    accesses: list = field(default_factory=list)
    identified: list[Identification] = field(default_factory=list)
    seconds: float = 0.0


def decide(problem: Problem, checker: Checker | None, provers: Provers, tactics: Tactics | None,
           known: Known | None = None, timeout_s: float = 600.0, progress: Callable[[str], None] | None = None,
           hints: dict[str, object] | None = None) -> Decision:
    """Each property's state, every obligation resting on the task's stated input preconditions. With `tactics`
    (verify) the goals are searched for and side conditions proved through the kernel with `checker`; without
    them (check) both come from `known`, and `hints` holds the certificate's hints (coverage's writers)."""
    ranges = {b.contents().name(): b.values for b in problem.buffers.values() if b.values}
    with preconditions.stated(ranges):
        return _Run(problem, checker, provers, tactics, known, timeout_s, progress, hints).decide()


class _Run:
    def __init__(self, problem: Problem, checker: Checker | None, provers: Provers, tactics: Tactics | None,
                 known: Known | None, timeout_s: float, progress, hints: dict | None):
        self.start = time.monotonic()
        self.problem, self.provers, self.tactics, self.timeout_s = problem, provers, tactics, timeout_s
        checker = FiniteOnly(checker if tactics is not None else known)
        if problem.launch.scalars:
            checker = WithSizes(checker, problem.launch.scalars)
        self.facts: list[Theorem] = []
        # side conditions of the derivation: through the kernel (verify) or answered by the certificate (check)
        self.checker, self.side = checker, Through(checker, self.facts) if tactics is not None else checker
        self.known = known
        self.log: list[tuple[Obligation, Outcome]] = []
        self.hints: dict[str, object] = dict(hints or {})
        self.note = progress or (lambda _msg: None)

    def record(self, ob: Obligation, outcome: Outcome) -> None:
        self.log.append((ob, outcome))

    def per_obligation(self) -> float:
        return max(min(self.timeout_s - (time.monotonic() - self.start), 120.0), 1.0)

    def decision(self, results: dict[str, PropertyResult], **kw) -> Decision:
        return Decision(self.problem, results, obligations=self.log, hints=self.hints, facts=self.facts,
                        seconds=time.monotonic() - self.start, **kw)

    def decide(self) -> Decision:
        problem = self.problem
        results = {p: PropertyResult() for p in PROPERTIES}
        problem, identified = _identify_constants(problem)
        try:
            self.note("symbolic execution")
            ctx, effects = self.execute(problem)
            if identified and not problem.exact_constants:
                ctx.axioms.update([CONSTANT_AXIOM, *(m.axiom for m in identified)])
            written = _written_inputs(ctx.accesses, problem.buffers) if problem.safety_only else set()
            if written:   # a declared buffer the kernel writes: its reads see the writes (role scratch), run again
                buffers = {n: replace(b, role="scratch") if n in written else b for n, b in problem.buffers.items()}
                problem = replace(problem, buffers=buffers)
                ctx, effects = self.execute(problem)
        except Unsupported as exc:
            reason = f"unsupported: {exc}{_source_suffix(exc.where, problem)}"
            for r in results.values():
                r.downgrade(UNKNOWN, reason)
            return self.decision(_all_unknown(problem, reason), reason=reason)
        self.problem = problem
        thread, launch, shared = ctx.thread, problem.launch, problem.shared_symbols
        side, t = self.side, self.per_obligation
        diverged = barriers.warp_uniform(ctx.warp_uniform, thread, launch, shared, side, t(), self.record)
        if diverged:
            reason = f"a warp-synchronous exchange may run in a partially converged warp ({diverged[0]})"
            return self.decision(_all_unknown(problem, reason), reason=reason, axioms=ctx.axioms)
        assumptions = z3.And(ctx.assumptions) if ctx.assumptions else z3.BoolVal(True)
        launch_ok = z3.And(thread.in_launch(launch), assumptions)
        accesses = ctx.accesses

        self.note("termination")
        results["termination"], bounds = termination.check(effects.loops, self.bounds(thread, launch, False),
                                                           thread, launch, side, t(), self.record, self.hints)
        effects.resolve_loops(bounds)
        self.note("values through shared memory")
        loop_shared.resolve(ctx, thread, launch, shared, self.provers.inverse, side, t(), self.record, self.hints)
        shared_values.resolve(ctx, thread, launch, shared, self.provers.inverse, side, t(), self.record, self.hints)
        readbacks.resolve(ctx, thread, launch, shared, side, t(), self.record)
        expected: dict[str, Goals] = {
            "memory_safety": memory_safety.goals(accesses, ctx.buffers, thread, launch_ok),
            "race_freedom": races.goals(accesses, thread, launch, shared),
            "barrier_uniformity": barriers.goals(ctx.barrier_paths, thread, launch, shared),
            "equivalence": []}
        self.note("memory safety")
        results["memory_safety"] = self.search("memory_safety", expected, accesses, ctx.buffers, thread, launch_ok,
                                               self.checker, t(), self.record)
        if results["memory_safety"].state != VIOLATED:
            results["memory_safety"].merge(registers.check(ctx.undefined_reads, thread, launch_ok, side, t(),
                                                           self.record))
        if results["memory_safety"].state != VIOLATED:
            results["memory_safety"].merge(shared_init.check(accesses, thread, launch, shared, self.provers.inverse,
                                                             side, t(), self.record, self.hints,
                                                             ctx.loop_initialized))
        self.note("race freedom")
        results["race_freedom"] = self.search("race_freedom", expected, accesses,
                                              {n: b.elem_bytes for n, b in ctx.buffers.items()}, thread, launch,
                                              shared, self.checker, t(), self.record)
        self.note("barrier uniformity")
        results["barrier_uniformity"] = self.search("barrier_uniformity", expected, ctx.barrier_paths, thread,
                                                    launch, shared, self.checker, t(), self.record)
        if results["barrier_uniformity"].state != VIOLATED:   # loops with barriers inside: equal trip counts
            results["barrier_uniformity"].merge(loop_barriers.check(effects.loops, thread, launch, shared, side,
                                                                    t(), self.record))
        self.note("equivalence")
        if problem.safety_only:
            results["equivalence"] = PropertyResult(NOT_APPLICABLE)
        else:
            results["equivalence"] = self.equivalence(accesses, ctx.opaque, thread, launch, launch_ok,
                                                      expected["equivalence"])
        if not problem.safety_only and ctx.assumes_initialized and results["memory_safety"].state != PROVED:
            results["equivalence"] = PropertyResult(UNKNOWN, ["the values read from shared memory assume every shared "
                                                              "read is initialised, which is not proved"])
        key = identity if self.tactics is not None else self.known.key
        goals = established(results, expected, ("stated", "rewritten") if self.tactics else ("stated",), key)
        standing = {p: standings(results[p], g, key) for p, g in expected.items()}
        return self.decision(results, axioms=ctx.axioms, expected=expected, goals=goals, standings=standing,
                             accesses=accesses, identified=identified)

    def execute(self, problem: Problem):
        """Bind the launch and run the symbolic thread: the context (accesses, assumptions, ...) and effects."""
        ctx = bind(problem.kernel, problem.launch, problem.args, problem.buffers, problem.precision)
        ctx.equations = self.equation
        if any(b.is_float for b in problem.buffers.values()):
            ctx.axioms.add("float.reals")   # the axiom every float verdict rests on (DESIGN §3)
        ctx.axioms.update(preconditions.describe(b.name, *b.values) for b in problem.buffers.values() if b.values)

        def exit_oracle(loop, key: str):
            return termination.exact_exit(loop, key, self.bounds(ctx.thread, problem.launch, True), ctx.thread,
                                          problem.launch, self.side, self.per_obligation(), self.record, self.hints)

        return ctx, execute(problem.kernel, ctx, exit_oracle)

    def equation(self, lhs: z3.ExprRef, rhs: z3.ExprRef, name: str) -> bool:
        """Whether a kernel theorem without hypotheses states lhs = rhs (`KernelContext.equations`): the tactics'
        theorem, kept as a fact (verify), or one replayed from the certificate (check)."""
        statement = lhs == rhs
        if self.tactics is None:
            return self.known.theorem(statement) is not None
        theorem = self.tactics.equation(lhs, rhs, name)
        if theorem is None or not theorem.states(statement):
            return False
        self.facts.append(theorem)
        return True

    def bounds(self, thread, launch, exact: bool) -> Callable:
        """The source of candidate loop bounds: the prover's list, or, with a search, the searched winner. Either
        way the obligations come from `termination` and the core checks them itself."""
        provers = self.provers
        if provers.search is None:
            return provers.bounds

        def searched(key: str, loop) -> list:
            def obligations(bound) -> list[Obligation]:
                exits = termination.obligation(loop, bound, thread, launch)
                return [exits, termination.stays_before(loop, bound, thread, launch)] if exact else [exits]
            return provers.search("bounds", key, (loop,), obligations, self.per_obligation())
        return searched

    def search(self, prop: str, expected: dict[str, Goals], *args) -> PropertyResult:
        """The goal-driven property's result: the tactics' (verify), or the certificate's theorems stating its
        goals (check)."""
        if self.tactics is not None:
            return getattr(self.tactics, prop)(*args)
        result = self.stated(expected[prop])
        if prop == "memory_safety" and memory_safety.not_applicable(*args[:2]):
            result.state = NOT_APPLICABLE
        return result

    def stated(self, goals: Goals) -> PropertyResult:
        """A result holding, for each goal, the replayed theorem that states one of its forms, if any."""
        result = PropertyResult()
        for _, forms in goals:   # the first form a replayed theorem states: later ones are not built
            theorem = next((t for f in accepted_forms(forms) if (t := self.known.theorem(f)) is not None), None)
            if theorem is not None:
                result.theorems.append(theorem)
        return result

    def equivalence(self, accesses, opaque, thread, launch, launch_ok, goals: Goals) -> PropertyResult:
        """The equivalence result; `goals` receives its top goals: each lane of each store to a plainly written
        output (but the lanes proved superseded) equals the reference, and each such output is covered."""
        problem, t, side = self.problem, self.per_obligation, self.side
        if problem.references is None:
            return PropertyResult(UNKNOWN, [f"reference not modelled: {problem.reference_problem}"])
        stores = [a for a in accesses if a.kind != "load" and a.space == "global"]
        strays = [a for a in stores if problem.buffers[a.buffer].role == "input"]
        if strays:
            return PropertyResult(UNKNOWN, [f"the kernel writes input buffer {strays[0].buffer} (line "
                                            f"{strays[0].line}); in-place updates are not modelled"])
        outputs = [a for a in stores if problem.buffers[a.buffer].role == "output"]
        summed = {a.buffer for a in outputs if a.kind == "atomic"}
        stored = [a for a in outputs if a.buffer not in summed]
        if larger_than([v for a in outputs for v in a.values], MAX_STORED_NODES):
            return PropertyResult(UNKNOWN, [f"the stored values have more than {MAX_STORED_NODES} distinct "
                                            f"subterms (values of every lane of a block, e.g. a reduction nested in "
                                            f"the body of another across threads): too large to compare"])
        why = _opaque_reason(outputs, opaque)
        if why:
            return PropertyResult(UNKNOWN, [why])
        overwritten = superseded.find(stored, problem.buffers, self.provers.inverse, thread, launch, launch_ok, side,
                                      t(), self.record, self.hints)
        goals += lanes.goals(stored, problem.buffers, problem.references, launch_ok, overwritten)
        if self.tactics is None:
            values = self.stated(goals)
        else:
            values = self.tactics.equivalence(stored, problem.buffers, problem.references, thread, launch_ok,
                                              self.checker, t(), self.record, self.provers, self.hints,
                                              frozenset(problem.shared_symbols), overwritten)
            if values.state == VIOLATED:
                return values
        for name in sorted(summed):
            if self.tactics is None:
                values.downgrade(UNKNOWN, f"{name} is accumulated with atomics, which lark check cannot re-derive "
                                          f"from kernel theorems yet")
                continue
            values.merge(self.tactics.atomics(problem.buffers[name], [a for a in outputs if a.buffer == name],
                                              problem.references[name], thread, launch, launch_ok,
                                              problem.shared_symbols, self.provers, self.checker, t(), self.record,
                                              self.hints))
        plain = {n: b for n, b in problem.buffers.items() if n not in summed}
        covering = coverage.goals(plain, stored, thread, launch, self.hints) if self.tactics is None else None
        covered = self.stated(covering) if covering is not None else \
            self.tactics.coverage(plain, stored, self.provers.inverse, thread, launch, self.checker, t(), self.record,
                                  self.hints)
        if covered.state == VIOLATED:
            return covered
        values.downgrade(covered.state)
        values.reasons.extend(covered.reasons)
        values.theorems += covered.theorems
        goals += covering if covering is not None else coverage.goals(plain, stored, thread, launch, self.hints)
        return values


def _identify_constants(problem: Problem) -> tuple[Problem, list[Identification]]:
    """The problem with every kernel literal within 2 ulps of a reference constant taken as that constant
    (axiom float.constant, each instance listed), and the identifications; under --exact-constants the
    kernel is unchanged and the identifications are only those that would have been made."""
    kernel, identified = identify(problem.kernel, problem.constants)
    if problem.exact_constants or not identified:
        return problem, identified
    return replace(problem, kernel=kernel), identified


def _all_unknown(problem: Problem, reason: str) -> dict[str, PropertyResult]:
    """Every property undecided (but equivalence of a safety-only task, which is never asked)."""
    return {p: PropertyResult(NOT_APPLICABLE) if p == "equivalence" and problem.safety_only
            else PropertyResult(UNKNOWN, [reason]) for p in PROPERTIES}


def _written_inputs(accesses, buffers: dict[str, Buffer]) -> set[str]:
    """Global buffers bound as inputs (reads see their initial contents only) that the kernel stores to."""
    return {a.buffer for a in accesses if a.kind != "load" and a.space == "global"
            and buffers[a.buffer].role == "input"}


def _opaque_reason(outputs: list, opaque: dict[str, str]) -> str | None:
    """Why an output's value is not modelled, if it depends on a value from other threads."""
    for access in outputs:
        names = {str(c) for v in access.values for c in local_constants(v, set())}
        for name in sorted(names & opaque.keys()):
            return opaque[name]
    return None


def _source_suffix(where: str | None, problem: Problem) -> str:
    """` [kernel.cu:12]` for an Unsupported located at a PTX line that has a source line, else ''."""
    if not where or not where.startswith("line ") or not where[5:].isdigit():
        return ""
    source = source_lines(problem.kernel, problem.source_files).get(int(where[5:]))
    return f" [{source}]" if source else ""
