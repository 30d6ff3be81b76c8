"""Coverage: every element of every output buffer is written (part of equivalence).

Proved from hints: for a symbolic element e, a hint names the thread (and loop iterations) that writes
it at one store site and vector lane. The obligation says "some e < N is covered by none of the hinted
writers", with the writers' loop reachability stated exactly; unsat proves coverage for every e at once.

Refuted only by a concrete element that no thread can write even under the over-approximated guards,
a query with no quantifier, so a reported hole is a real one.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics import purify
from semantics.proof.indices import defines
from semantics.properties.common import UNKNOWN, VIOLATED, Finding, PropertyResult, goal_of, prove
from semantics.properties.lanes import E_INDEX, element_index
from semantics.ptx.machine import Buffer, Launch, Thread
from semantics.ptx.state import Access
from semantics.terms import subterms

E = E_INDEX
Hint = tuple[Access, int, dict[str, z3.ExprRef]]   # (store site, vector lane, variable name -> term in e)


def writer_variables(access: Access, thread: Thread) -> list[z3.BitVecRef]:
    return [*thread.variables(), *(k for _, k in access.loops)]


def _exact_guard(access: Access) -> z3.BoolRef:
    return z3.And(access.guard, *[loop.reached(k) for loop, k in access.loops])


def covers(access: Access, lane: int, element: z3.BitVecRef) -> z3.BoolRef:
    return element_index(access, lane) == element


def obligation(buffer: Buffer, hints: list[Hint], thread: Thread, launch: Launch) -> Obligation:
    cases = []
    for access, lane, hint in hints:
        subst = [(v, hint[str(v)]) for v in writer_variables(access, thread)]
        written = z3.And(thread.in_launch(launch), _exact_guard(access), covers(access, lane, E))
        cases.append(z3.substitute(written, *subst))
    formula = _split_divisions(z3.And(z3.ULT(E, buffer.numel), z3.Not(z3.Or(cases))))
    return Obligation(f"equivalence: every element of {buffer.name} is written", "equivalence", formula,
                      {"element_index": E})


def _split_divisions(formula: z3.BoolRef) -> z3.BoolRef:
    """The formula with each d / N and d mod N (N a constant, d a term free of bound variables: the writer
    of element e is named by the row e / N and the column e mod N, at each unrolled store e - k·256 / N …)
    as a fresh q and r, defined by `semantics.proof.indices.defines` (exactly one solution): equisatisfiable,
    and a model still gives e. A division by a constant that is not a power of two is a large circuit to z3, a product
    by it is not: the coverage of 393216-column rows exceeded z3's work limit before."""
    found: dict[tuple[int, int], tuple[z3.BitVecRef, int, list[z3.ExprRef]]] = {}
    for t in purify.by_constant(formula):
        if t.arg(0).size() == 64 and not any(z3.is_var(u) for u in subterms(t.arg(0))):
            key = (t.arg(0).get_id(), t.arg(1).as_long())
            found.setdefault(key, (t.arg(0), t.arg(1).as_long(), []))[2].append(t)
    pairs, facts = [], []
    for n, (dividend, divisor, terms) in enumerate(found.values()):
        q, r = z3.BitVec(f"coverage.q{n}", 64), z3.BitVec(f"coverage.r{n}", 64)
        pairs += [(t, q if purify.is_quotient(t) else r) for t in terms]
        facts.append(defines(dividend, divisor, q, r))
    # (a dividend may hold a division too)
    return z3.substitute(z3.And(formula, *facts), *pairs) if pairs else formula


def never_written(buffer: Buffer, stores: list[Access], element: int, thread: Thread, launch: Launch) -> Obligation:
    """Sat iff some thread may write `element` (guards over-approximate loops, so unsat is definite)."""
    lanes = [z3.And(a.guard, covers(a, j, z3.BitVecVal(element, 64))) for a in stores for j in range(len(a.values))]
    return Obligation(f"equivalence: {buffer.name}[{element}] is written", "equivalence",
                      z3.And(thread.in_launch(launch), z3.Or(lanes) if lanes else z3.BoolVal(False)))


def _key(buffer: Buffer, access: Access, lane: int) -> str:
    return f"coverage:{buffer.name}:line{access.line}:lane{lane}"


def goals(buffers: dict[str, Buffer], stores: list[Access], thread: Thread, launch: Launch,
          accepted: dict) -> list[tuple[str, z3.BoolRef | None]]:
    """The top goals: per output buffer, every element e < N is written by a thread of the launch that
    reaches a store to it — in the form proved from the writers named by the accepted hints (a statement
    that implies it: each named writer is such a thread). None where no hint was accepted."""
    out = []
    for buffer in buffers.values():
        if buffer.role != "output":
            continue
        hints = [(a, lane, accepted[_key(buffer, a, lane)]) for a in stores if a.buffer == buffer.name
                 for lane in range(len(a.values)) if _key(buffer, a, lane) in accepted]
        ob = obligation(buffer, hints, thread, launch) if hints else None
        out.append((f"equivalence: every element of {buffer.name} is written", goal_of(ob) if ob else None))
    return out


def check(buffers: dict[str, Buffer], stores: list[Access], propose: Callable, thread: Thread, launch: Launch,
          checker: Checker, timeout_s: float, record, accepted: dict) -> PropertyResult:
    """`propose(key, index, variables, e)` is the untrusted hint source; hints of a proved obligation are
    put in `accepted` under their keys, for the certificate."""
    result = PropertyResult()
    for buffer in buffers.values():
        if buffer.role != "output":
            continue
        own = [a for a in stores if a.buffer == buffer.name]
        hints = []
        for access in own:
            for lane in range(len(access.values)):
                key = _key(buffer, access, lane)
                hint = propose(key, element_index(access, lane), writer_variables(access, thread), E)
                if hint is not None:
                    hints.append((access, lane, hint, key))
        candidates = [0, buffer.numel - 1]
        if hints:
            ob = obligation(buffer, [h[:3] for h in hints], thread, launch)
            outcome = prove(ob, checker, timeout_s, record, result)
            if outcome.status == PROVED:
                accepted.update({key: hint for _, _, hint, key in hints})
                continue
            if outcome.status == REFUTED:
                candidates.insert(0, outcome.model["element_index"])
        hole = _find_hole(buffer, own, candidates, thread, launch, checker, timeout_s, record)
        if hole is not None:
            result.downgrade(VIOLATED)
            result.findings.append(Finding(
                "equivalence", f"{buffer.name}[{hole}] is never written (the reference defines every one of its "
                               f"{buffer.numel} elements)",
                {"buffer": buffer.name, "element_index": hole, "written_by": None}))
            return result
        result.downgrade(UNKNOWN, f"could not prove that every element of {buffer.name} is written"
                                  + ("" if hints else " (no writer could be proposed for a symbolic element)"))
    return result


def _find_hole(buffer, stores, candidates, thread, launch, checker, timeout_s, record) -> int | None:
    for element in dict.fromkeys(candidates):
        ob = never_written(buffer, stores, element, thread, launch)
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        if outcome.status == PROVED:
            return element
    return None
