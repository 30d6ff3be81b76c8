"""Memory safety: every access lies inside the allocation its pointer came from, naturally aligned."""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics import preconditions, purify
from semantics.properties.common import (
    NOT_APPLICABLE,
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    goal_of,
    input_reads,
    mentions_opaque,
    prove,
    shaped_inputs,
    shaped_thread,
    thread_witness,
    witness_reached,
)
from semantics.ptx.machine import Buffer, Thread
from semantics.ptx.state import Access


def safe(access: Access, buffer: Buffer) -> z3.BoolRef:
    """In bounds (without wrap-around) and aligned to the access's own width."""
    size = buffer.size_bytes
    if access.width > size:
        return z3.BoolVal(False)
    off = access.offset
    return z3.And(z3.ULE(off, size - access.width), z3.URem(off, min(access.width, 16)) == 0)


def obligation(access: Access, buffer: Buffer, thread: Thread, launch_ok: z3.BoolRef) -> Obligation:
    # (divisions by constants named by their quotient and remainder: equisatisfiable, and far cheaper)
    formula = purify.purified(z3.And(launch_ok, access.guard, z3.Not(safe(access, buffer))))
    witness = {**thread_witness(thread, access.loops), "offset": access.offset, **input_reads(formula)}
    return Obligation(f"memory_safety: {access.kind} {buffer.name} at line {access.line}", "memory_safety",
                      formula, witness)


def goals(accesses: list[Access], buffers: dict[str, Buffer], thread: Thread,
          launch_ok: z3.BoolRef) -> list[tuple[str, z3.BoolRef]]:
    """The top goals: per access to a bounded buffer, no thread of the launch that performs it is out of bounds
    or misaligned (¬(launch ∧ guard ∧ ¬safe)), each with the obligation's name."""
    obs = [obligation(a, buffers[a.buffer], thread, launch_ok) for a in accesses if not buffers[a.buffer].unbounded]
    return [(ob.name, goal_of(ob)) for ob in obs]


def check(accesses: list[Access], buffers: dict[str, Buffer], thread: Thread, launch_ok: z3.BoolRef,
          checker: Checker, timeout_s: float, record) -> PropertyResult:
    """One obligation per access site; a model is a witness once its loop iterations are confirmed. Accesses
    to an unbounded buffer have no bound to check; when every access is one, the property is not applicable."""
    bounded = [a for a in accesses if not buffers[a.buffer].unbounded]
    result = PropertyResult(NOT_APPLICABLE) if accesses and not bounded else PropertyResult()
    for access in bounded:
        buffer = buffers[access.buffer]
        ob = obligation(access, buffer, thread, launch_ok)
        outcome = prove(ob, checker, timeout_s, record, result)
        if outcome.status == PROVED:
            continue
        if outcome.status == REFUTED and access.loops:
            ob, outcome = _earliest(ob, access, outcome, checker, timeout_s, record)
        if outcome.status == REFUTED and not mentions_opaque(ob.formula) and \
                witness_reached(access.loops, ob.witness, outcome.model, checker, timeout_s, "memory_safety"):
            result.downgrade(VIOLATED)
            result.findings.append(_finding(access, buffer, outcome.model))
            result.findings[-1].witness["inputs"] = shaped_inputs(ob.formula, outcome.model)
            break
        result.downgrade(UNKNOWN, f"could not prove the {access.kind} of {buffer.name} at line {access.line} "
                                  f"in bounds ({outcome.reason or 'counterexample not confirmed'})")
    return result


def _earliest(ob: Obligation, access: Access, outcome, checker: Checker, timeout_s: float, record):
    """The violation at iteration 0 of each enclosing loop where there is one there, outermost first: the concrete
    interpreter stops at a thread's first violation, so a witness at a later iteration of a loop whose first
    iteration already faults would not replay. Only the choice of witness changes (the replay still decides)."""
    for _, k in access.loops:
        pinned = Obligation(f"{ob.name}, iteration {k} = 0", ob.prop,
                            preconditions.strengthened(z3.And(ob.formula, k == 0)), ob.witness)
        tried = checker.check(pinned, timeout_s)
        record(pinned, tried)
        if tried.status == REFUTED:
            ob, outcome = pinned, tried
    return ob, outcome


def _finding(access: Access, buffer: Buffer, model: dict) -> Finding:
    """The witness, sized in elements of the access (a shared array is bytes to the model, floats to its
    reader): index and size in the same unit, the byte offset beside them."""
    offset = model["offset"]
    signed = offset - (1 << 64) if offset >= 1 << 63 else offset
    unit = access.elem_bytes if buffer.role == "shared" else buffer.elem_bytes
    index, elements = signed // unit, buffer.size_bytes // unit
    problem = "misaligned" if signed % min(access.width, 16) else "out of bounds"
    where = f"line {access.line}"
    msg = (f"{access.kind} of {buffer.name}[{index}] ({access.width} bytes at byte offset {signed}) is "
           f"{problem}: {buffer.name} has {elements} elements of {unit} bytes ({where})")
    if buffer.role == "null":
        msg = (f"{access.kind} through the null pointer {buffer.name} ({access.width} bytes at byte offset "
               f"{signed}, {where})")
    witness = {**shaped_thread(model), "buffer": buffer.name, "element_index": index, "byte_offset": signed,
               "access": access.kind, "bytes": access.width, "buffer_elements": elements, "element_bytes": unit,
               "line": access.line}
    return Finding("memory_safety", msg, witness)
