"""`lark verify --show STAGE`: what each pass produced, so a person can see where a proof stops.

The stages, in the order the core runs them: the PTX the frontend compiled (`ptx`), the reference's element
terms (`reference`), the symbolic thread's memory accesses (`effects`), the top goal of every property
(`goals`), the theorems the kernel made for them (`proof`), and every obligation with its outcome
(`obligations`). This module only formats: the data comes from `Prepared` and the core's `Report`. Terms
are cut to a readable length (`MAX_TERM`); the full terms are in a certificate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:    # only formats them: the CLI imports this module for every command (`lark batch` too)
    from orchestrator.pipeline import Prepared
    from semantics.verdict import Report

MAX_TERM = 240           # characters of one printed term
MAX_ROWS = 200           # rows of one stage (a row per access, goal, theorem or obligation)


def _term(term: object) -> str:
    text = " ".join(str(term).split())
    return text if len(text) <= MAX_TERM else text[:MAX_TERM - 5] + " ..."


def _rows(rows: list[str], what: str) -> list[str]:
    if not rows:
        return [f"  (no {what}: the pass did not run or produced none)"]
    cut = len(rows) - MAX_ROWS
    if cut <= 0:
        return rows
    # the first rows and the last: a proof that stops, stops at its last obligations
    return rows[:MAX_ROWS // 2] + [f"  ... {cut} more {what}"] + rows[-(MAX_ROWS - MAX_ROWS // 2):]


def _where(prepared: Prepared, loc: tuple[int, int] | None) -> str:
    """The source line an access came from (`kernel.cu:17`), when the PTX records it."""
    if not loc:
        return ""
    path = prepared.problem.source_files.get(loc[0], "?")
    return f" [{path.rsplit('/', 1)[-1]}:{loc[1]}]"


def ptx(prepared: Prepared, report: Report) -> list[str]:
    return prepared.compiled.ptx.rstrip().splitlines()


def reference(prepared: Prepared, report: Report) -> list[str]:
    problem = prepared.problem
    if problem.references is None:
        why = problem.reference_problem or "safety-only task: no reference"
        return [f"  (no reference terms: {why})"]
    import z3
    e = z3.BitVec("e", 64)
    rows = []
    for name, element in sorted(problem.references.items()):
        try:
            rows.append(f"  {name}[e] (e < {problem.buffers[name].numel}) = {_term(element(e))}")
        except Exception as exc:  # noqa: BLE001 - an unmodelled op shows as such, not as a crash of --show
            rows.append(f"  {name}[e]: not modelled ({exc})")
    return rows


def effects(prepared: Prepared, report: Report) -> list[str]:
    rows = []
    for a in report.accesses:
        loops = f" in {len(a.loops)} loop(s)" if a.loops else ""
        values = f" <- {', '.join(_term(v) for v in a.values)}" if a.kind != "load" and a.values else ""
        where = f"line {a.line}{_where(prepared, a.loc)}"
        rows.append(f"  {where}: {a.kind} {a.space} {a.buffer} +{_term(a.offset)} ({a.width} B){loops}{values}\n"
                    f"      when {_term(a.guard)}")
    return _rows(rows, "accesses")


def _stated(report: Report, prop: str) -> dict[int, str]:
    """Statement id -> the name of the goal it is, for the property's goals."""
    from semantics.verdict import accepted_forms

    return {f.get_id(): what for what, form in report.expected.get(prop, []) for f in accepted_forms(form)}


def goals(prepared: Prepared, report: Report) -> list[str]:
    """Per property, its top goals counted by how they stand (`semantics.verdict.standings`, what the verdict
    decided by); each goal that is neither stated nor rewritten is listed with its obligation's outcome (that
    is where a proof stops: `open`, or `no form` where the checks gave no statement to prove)."""
    rows = []
    asked = {ob.name: f"{out.status}" + (f" ({out.reason})" if out.reason else "") for ob, out in report.obligations}
    for prop, stand in report.standings.items():
        counts = Counter(how for _, how in stand)
        rows.append(f"  {prop} ({report.properties.get(prop)}): {len(stand)} goal(s)"
                    + "".join(f", {n} {how}" for how, n in sorted(counts.items())))
        rows += [f"    [{how}] {what}: {asked.get(what, 'its obligation was not asked')}"
                 for what, how in stand if how not in ("stated", "rewritten")]
    return _rows(rows, "goals")


def proof(prepared: Prepared, report: Report) -> list[str]:
    """Per property, its theorems counted by rule and by whether they state a top goal; the others (lemmas,
    conditional theorems) are listed with their statements."""
    rows = []
    for prop, theorems in report.theorems.items():
        names = _stated(report, prop)
        top = [t for t in theorems if not t.hypotheses and t.conclusion.get_id() in names]
        rules = Counter(t.rule for t in theorems)
        rows.append(f"  {prop} ({report.properties.get(prop)}): {len(theorems)} theorem(s), {len(top)} of them "
                    f"top goals; by rule: " + ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items())))
        for t in (t for t in theorems if t not in top):
            hyps = f", {len(t.hypotheses)} hypothesis(es)" if t.hypotheses else ""
            rows.append(f"    [{t.rule}: {len(t.evidence)} obligation(s){hyps}] ⊢ {_term(t.conclusion)}")
    return _rows(rows, "theorems")


def obligations(prepared: Prepared, report: Report) -> list[str]:
    rows = [f"  {outcome.status:8} {outcome.seconds:7.3f} s  {ob.name}"
            + (f"  ({outcome.reason})" if outcome.reason else "") for ob, outcome in report.obligations]
    return _rows(rows, "obligations")


STAGES: dict[str, Callable[[Prepared, Report], list[str]]] = {
    "ptx": ptx, "reference": reference, "effects": effects, "goals": goals, "proof": proof,
    "obligations": obligations,
}


def render(stages: tuple[str, ...], prepared: Prepared, report: Report) -> str:
    """The asked stages, in the core's order, each under a header line."""
    parts = []
    for stage in (s for s in STAGES if s in stages):
        parts.append(f"== {stage} ==")
        parts += STAGES[stage](prepared, report)
    return "\n".join(parts)
