"""Race freedom's proof search: each conflicting pair's goal (`races.goals`) proved by a quick `by_smt`, else across
blocks by the per-block slab lemma (`block_slabs`), else by the full query, else for one store site in its
warp-wide form; a model of the race obligation is a witness once both threads' iterations are confirmed reached.
A tactic: it proposes theorems, `semantics.goals.established` decides whether they state the goals.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation, Outcome
from semantics.checkers import over_atoms
from semantics.proof.rules import conj
from semantics.properties import block_slabs
from semantics.properties.common import (
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    escape,
    goal_of,
    mentions_opaque,
    prove,
    rename_apart,
    shaped_inputs,
    shaped_thread,
    thread_witness,
)
from semantics.properties.races import OTHER, conflicting_pairs, obligation, warp_wide_obligations
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access

QUICK_S = 1.0   # the plain obligation's first try; a harder global pair goes to the slab lemma first
ATOMS_S = 10.0  # a warp-wide store's obligation with its comprehensions as atoms, before the plain query


def check(accesses: list[Access], elem_bytes: dict[str, int], thread: Thread, launch: Launch, shared: set[str],
          checker: Checker, timeout_s: float, record) -> PropertyResult:
    result = PropertyResult()
    slabs = block_slabs.Slabs(thread, OTHER, launch, checker, timeout_s, record)
    for a, b in conflicting_pairs(accesses):
        ob = obligation(a, b, thread, launch, shared)
        outcome = prove(ob, checker, min(timeout_s, QUICK_S), record, result)
        if outcome.status not in (PROVED, REFUTED) and a.space == "global":
            if (theorem := _by_slabs(a, b, ob, thread, shared, slabs)) is not None:
                result.theorems.append(theorem)
                continue
        if outcome.status not in (PROVED, REFUTED) and timeout_s > QUICK_S:
            outcome = prove(ob, checker, timeout_s, record, result)
        if outcome.status != PROVED and a is b:
            outcome = _warp_wide(a, thread, launch, shared, checker, timeout_s, record, result) or outcome
        if outcome.status == PROVED:
            continue
        if outcome.status == REFUTED and not mentions_opaque(ob.formula) and \
                _reached(a, b, ob, outcome, thread, checker, timeout_s):
            result.downgrade(VIOLATED)
            size = a.elem_bytes if a.space == "shared" else elem_bytes[a.buffer]
            result.findings.append(_finding(a, b, size, outcome.model))
            result.findings[-1].witness["inputs"] = shaped_inputs(ob.formula, outcome.model)
            break
        result.downgrade(UNKNOWN, f"could not rule out a race between lines {a.line} and {b.line} on {a.buffer} "
                                  f"({outcome.reason or 'counterexample not confirmed'})")
    return result


def _warp_wide(a: Access, thread: Thread, launch: Launch, shared: set[str], checker: Checker, timeout_s: float,
               record, result: PropertyResult):
    """The outcome of the site's race goal in its warp-wide form (`races.warp_wide_goal`: the conjunction of the
    uniformity obligations and of the race between warps, each by `by_smt`, joined by `conj`), or None when the
    site is not a warp-wide write."""
    obs = warp_wide_obligations(a, thread, launch, shared)
    if obs is None:
        return None
    proved = PropertyResult()
    for ob in obs:
        outcome = _over_atoms(ob, checker, timeout_s, record, proved) or prove(ob, checker, timeout_s, record, proved)
        if outcome.status != PROVED:
            return None if ob is not obs[-1] else outcome
    result.theorems.append(conj(*proved.theorems))
    return outcome


def _over_atoms(ob: Obligation, checker: Checker, timeout_s: float, record, result: PropertyResult) -> Outcome | None:
    """The outcome of `ob` proved with each comprehension outside binders read as an atom (`checkers.over_atoms`),
    or None where it has none or is not proved so. Lanes that store one value hold the same Sums in another order
    (a butterfly's), which needs no more than that; and the obligation then names no lambda, which cvc5 cannot
    read (`lark check --solver both`)."""
    theorem = over_atoms(goal_of(ob), checker, min(timeout_s, ATOMS_S), ob.name, ob.prop)
    if theorem is None:
        return None
    (checked, outcome), = theorem.evidence
    record(checked, outcome)
    result.theorems.append(theorem)
    return outcome


def _by_slabs(a: Access, b: Access, ob: Obligation, thread: Thread, shared: set[str],
              slabs: block_slabs.Slabs):
    """⊢ ¬race at (a, b) by the per-block slab lemma (`block_slabs`), or None."""
    pairs = rename_apart([b.guard, b.offset], thread, OTHER, shared)
    guard_b, offset_b = (z3.substitute(t, *pairs) for t in (b.guard, b.offset))
    return block_slabs.prove_race_free(a, b, ob.formula, guard_b, offset_b, pairs, slabs, ob.name)


def _reached(a: Access, b: Access, ob: Obligation, outcome, thread: Thread, checker: Checker,
             timeout_s: float) -> bool:
    """Both threads' loop iterations in the model are really reached."""
    for access, suffix in ((a, ""), (b, "'")):
        if not access.loops:
            continue
        originals = thread_witness(thread, access.loops)
        named = thread_witness(thread, access.loops, suffix)   # same order, the names the model used
        fixes = [(t, z3.BitVecVal(outcome.model[name], t.size()))
                 for t, name in zip(originals.values(), named, strict=True)]
        probe = Obligation("reachability of a witness", "race_freedom", escape(access.loops, fixes))
        if checker.check(probe, timeout_s).status != PROVED:
            return False
    return True


def _finding(a: Access, b: Access, elem_bytes: int, model: dict) -> Finding:
    index = model["offset"] // elem_bytes
    first, second = shaped_thread(model), shaped_thread(model, "'")
    msg = (f"data race on {a.buffer}[{index}]: block {first['block']} thread {first['thread']} {a.kind}s it "
           f"(line {a.line}) while block {second['block']} thread {second['thread']} {b.kind}s it "
           f"(line {b.line})")
    witness = {"buffer": a.buffer, "element_index": index,
               "first": {**first, "access": a.kind, "line": a.line},
               "second": {**second, "access": b.kind, "line": b.line}}
    return Finding("race_freedom", msg, witness)
