"""`lark verify`'s decision: the trusted core (`semantics.derive`) driven with the tactics that search for proofs.

The core states every property's top goals and holds a property `proved` only where kernel theorems state them;
this module hands it the proof search (`TACTICS`: the property checks with the matcher, the slab lemma and the
other tactics behind them), confirms refutations on the concrete interpreter, and merges the property states
into one verdict: any property violated -> refuted (with its witness), else any unknown -> unknown (with every
reason), else verified (each property proved or not applicable). Provers (hint sources) are passed in and never
trusted. A safety-only task (no reference) has equivalence not applicable and checks the other four.

Nothing here decides that a goal is met: a bug in this module or in a tactic can lose a proof, or report a
refutation the interpreter did not show (it drops those), but not make a `verified`.
"""

from __future__ import annotations

from collections.abc import Callable

from lean_pool.checker import Checker
from semantics.checkers import FiniteOnly, WithSizes
from semantics.concrete.reproduce import confirm
from semantics.constants import AXIOM as CONSTANT_AXIOM
from semantics.constants import Identification
from semantics.derive import MAX_STORED_NODES, Decision, Tactics, decide
from semantics.goals import accepted_forms, established, merge, standings
from semantics.problem import Problem, Provers, Report
from semantics.properties import atomics, barriers, coverage, equivalence, memory_safety, race_search
from semantics.properties.common import UNKNOWN, VIOLATED, Finding, PropertyResult
from semantics.ptx import exp_monomials
from semantics.ptx.ast import Kernel
from semantics.ptx.machine import Launch
from semantics.sources import source_lines

__all__ = ["MAX_STORED_NODES", "TACTICS", "FiniteOnly", "Problem", "Provers", "Report", "WithSizes",
           "accepted_forms", "established", "merge", "source_lines", "standings", "verify"]

TACTICS = Tactics(memory_safety=memory_safety.check, race_freedom=race_search.check, barrier_uniformity=barriers.check,
                  equivalence=equivalence.check, atomics=atomics.check, coverage=coverage.check,
                  equation=exp_monomials.prove_rebased)


def verify(problem: Problem, checker: Checker, provers: Provers, timeout_s: float = 600.0,
           progress: Callable[[str], None] | None = None, tactics: Tactics = TACTICS) -> Report:
    """Decide the problem's properties, every obligation resting on its inputs' stated preconditions."""
    found = decide(problem, checker, provers, tactics, timeout_s=timeout_s, progress=progress)
    return report(found, progress)


def report(found: Decision, progress: Callable[[str], None] | None = None) -> Report:
    """The verdict of a decision: refutations confirmed on the concrete interpreter first."""
    problem, results = found.problem, found.results
    if found.reason is not None:
        return Report("unknown", {p: r.state for p, r in results.items()}, [], found.reason, sorted(found.axioms),
                      found.obligations, found.seconds, found.hints, facts=found.facts)
    (progress or (lambda _msg: None))("reproducing refutations")
    confirm(problem, results)   # on the concrete interpreter: a finding it does not show is dropped (unknown)
    if problem.exact_constants and found.identified and results["equivalence"].state in (VIOLATED, UNKNOWN):
        results["equivalence"] = _near_constants(found.identified, results["equivalence"])
    verdict, reason = merge(results)
    findings = [f for r in results.values() for f in r.findings]
    for finding in findings:
        locate(finding, problem.kernel, problem.source_files, problem.language)
        name_sizes(finding, problem.launch)
    return Report(verdict, {p: r.state for p, r in results.items()}, findings, reason, sorted(found.axioms),
                  found.obligations, found.seconds, found.hints, found.goals, found.accesses, found.expected,
                  {p: list(r.theorems) for p, r in results.items()}, found.standings, found.facts)


def _near_constants(identified: list[Identification], found: PropertyResult) -> PropertyResult:
    """Under --exact-constants, equivalence not proved in a kernel whose literals differ from reference
    constants by rounding: never a bare refutation, since those literals alone may be the whole difference.
    The result is unknown, naming the literals, then whatever else was found (a finding is dropped)."""
    near = ", ".join(f"0x{m.literal:08X} is within 2 ulps of {m.name} (0x{m.constant:08X})" for m in identified)
    return PropertyResult(UNKNOWN, [f"--exact-constants, and the kernel's constant {near}: a wrong value may be "
                                    "that rounding alone (without --exact-constants the literal is taken as the "
                                    f"constant, axiom {CONSTANT_AXIOM})", *found.reasons])


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

