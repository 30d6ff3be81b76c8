"""Barrier uniformity: all threads of a block reach the same sequence of barriers.

Each finished path of the symbolic thread records the barriers it passed. Two threads of one block that
follow paths with different barrier sequences are a divergence; the model of the query is the witness
(two concrete threads of one block and the barrier one of them reaches without the other).
"""

from __future__ import annotations

import itertools

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics.properties.common import (
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    goal_of,
    input_reads,
    mentions_opaque,
    prove,
    rename_apart,
    shaped_inputs,
    shaped_thread,
    thread_witness,
)
from semantics.properties.races import OTHER
from semantics.ptx.machine import Launch, Thread


def _rename(cond: z3.BoolRef, thread: Thread, shared: set[str]) -> z3.BoolRef:
    return z3.substitute(cond, *rename_apart([cond], thread, OTHER, shared))


def warp_uniform(conditions: list[tuple], thread: Thread, launch: Launch, shared: set[str],
                 checker: Checker, timeout_s: float, record) -> list[str]:
    """Side conditions of warp-synchronous exchanges: every lane of the warp is on the same path there.
    Returns the description of each one not proved. A condition may name the loops it lies in, (LoopInfo, k)
    pairs: then the other lane is at the same iterations, and each loop is entered by both lanes or neither
    and left by both at the same iteration (its stay condition agrees at every iteration j), so both are at
    iteration k together and the path there (`reach` placeholder included) is compared as one."""
    failed = []
    warp = z3.UDiv(thread.tid[0], 32) == z3.UDiv(OTHER.tid[0], 32)
    lanes = z3.And(thread.in_launch(launch), OTHER.in_launch(launch), thread.same_block(OTHER), warp)
    for what, cond, *inside in conditions:
        loops = inside[0] if inside else ()
        common = shared | {str(s) for loop, k in loops for s in (k, loop.placeholder)}
        agree = [(cond, common)]
        for loop, _ in loops:
            j = z3.BitVec(f"j.uniform.{loop.header}", 64)
            agree += [(loop.entry, shared), (loop.stay_at(j), shared | {str(j)})]
        for part, kept in agree:
            ob = Obligation(f"barrier_uniformity: every lane of the warp reaches the {what}", "barrier_uniformity",
                            z3.And(lanes, part, z3.Not(_rename(part, thread, kept))))
            outcome = checker.check(ob, timeout_s)
            record(ob, outcome)
            if outcome.status != PROVED:
                failed.append(what)
                break
    return failed


Path = tuple[z3.BoolRef, tuple[int, ...]]   # (path condition, the barrier lines it passes)


def obligation(a: Path, b: Path, thread: Thread, launch: Launch, shared: set[str]) -> Obligation:
    """Two threads of one block take paths a and b, which pass different barrier sequences."""
    (cond_a, seq_a), (cond_b, seq_b) = a, b
    formula = z3.And(thread.in_launch(launch), OTHER.in_launch(launch), thread.same_block(OTHER), cond_a,
                     _rename(cond_b, thread, shared))
    return Obligation(f"barrier_uniformity: barriers {list(seq_a)} vs {list(seq_b)}", "barrier_uniformity",
                      formula, {**thread_witness(thread), **thread_witness(OTHER, (), "'"), **input_reads(formula)})


def _divergent(paths: list[Path]) -> list[tuple[Path, Path]]:
    return [(a, b) for a, b in itertools.combinations(paths, 2) if a[1] != b[1]]


def goals(paths: list[Path], thread: Thread, launch: Launch, shared: set[str]) -> list[tuple[str, z3.BoolRef]]:
    """The top goals: per pair of paths with different barrier sequences, no two threads of a block take
    them both."""
    return [(ob.name, goal_of(ob)) for ob in (obligation(a, b, thread, launch, shared) for a, b in _divergent(paths))]


def check(paths: list[Path], thread: Thread, launch: Launch, shared: set[str],
          checker: Checker, timeout_s: float, record) -> PropertyResult:
    result = PropertyResult()
    for a, b in _divergent(paths):
        (_, seq_a), (_, seq_b) = a, b
        ob = obligation(a, b, thread, launch, shared)
        outcome = prove(ob, checker, timeout_s, record, result)
        if outcome.status == PROVED:
            continue
        if outcome.status == REFUTED and not mentions_opaque(ob.formula):
            first, second = shaped_thread(outcome.model), shaped_thread(outcome.model, "'")
            line = next((x for x, y in itertools.zip_longest(seq_a, seq_b) if x != y), None) or \
                next(y for x, y in itertools.zip_longest(seq_a, seq_b) if x != y)
            result.downgrade(VIOLATED)
            result.findings.append(Finding(
                "barrier_uniformity",
                f"barrier divergence in block {first['block']}: thread {first['thread']} passes the barriers at "
                f"lines {list(seq_a)}, thread {second['thread']} those at lines {list(seq_b)} (first difference "
                f"at line {line})",
                {"first": {**first, "barriers": list(seq_a)}, "second": {**second, "barriers": list(seq_b)},
                 "line": line, "inputs": shaped_inputs(ob.formula, outcome.model)}))
            return result
        result.downgrade(UNKNOWN, f"could not decide barrier uniformity ({outcome.reason})")
    return result
