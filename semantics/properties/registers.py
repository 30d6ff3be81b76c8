"""Defined registers: every register a thread reads holds a value written earlier on its path.

Part of memory safety (DESIGN §3: every read of a location reads a value written earlier). A register gets
no value from a write under a false predicate, so `@%p add.f32 %f2, ...` followed by a read of `%f2` reads
nothing where `%p` is false. The executor records each read that may find no value (`UndefinedRead`: the
path condition and the register's undefined condition, `ThreadState.undefined`); one obligation per read
site says no thread of the launch gets there. Where it holds, the register's value is the predicated one on
every path that reads it, which is what the executor used.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics import preconditions
from semantics.properties.common import (
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    mentions_opaque,
    shaped_thread,
    thread_witness,
    witness_reached,
)
from semantics.ptx.machine import Thread
from semantics.ptx.state import UndefinedRead


def obligation(read: UndefinedRead, thread: Thread, launch_ok: z3.BoolRef) -> Obligation:
    """Unsat iff no thread of the launch reads `read.register` at `read.line` where it holds no value."""
    return Obligation(f"memory_safety: register {read.register} defined before its read at line {read.line}",
                      "memory_safety", preconditions.strengthened(z3.And(launch_ok, read.guard)),
                      thread_witness(thread, read.loops))


def check(reads: list[UndefinedRead], thread: Thread, launch_ok: z3.BoolRef, checker: Checker, timeout_s: float,
          record) -> PropertyResult:
    """One obligation per read site; a model is a witness once its loop iterations are confirmed reached."""
    result = PropertyResult()
    for read in reads:
        ob = obligation(read, thread, launch_ok)
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        if outcome.status == PROVED:
            continue
        if outcome.status == REFUTED and not mentions_opaque(ob.formula) and \
                witness_reached(read.loops, ob.witness, outcome.model, checker, timeout_s, "memory_safety"):
            result.downgrade(VIOLATED)
            result.findings.append(_finding(read, outcome.model))
            break
        result.downgrade(UNKNOWN, f"could not prove register {read.register} defined where line {read.line} "
                                  f"reads it ({outcome.reason or 'counterexample not confirmed'})")
    return result


def _finding(read: UndefinedRead, model: dict) -> Finding:
    witness = {**shaped_thread(model), "register": read.register, "access": "register read", "line": read.line}
    msg = (f"register {read.register} is read at line {read.line} where no instruction on the thread's path "
           f"wrote it (a write under a false predicate defines nothing)")
    return Finding("memory_safety", msg, witness)
