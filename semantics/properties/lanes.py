"""The top goals of value equivalence: each vector element (lane) of each store to an output buffer writes what
the reference computes at that element.

A lane's goal is ¬(hypothesis ∧ value ≠ ref(e)): no thread of the launch performs the store's lane at an element
e of the buffer and stores a value other than the reference's there. The reference's term `ref(e)` is built
from the captured graph (its bound variables are named after the graph's nodes, so two calls give one term).
Together with coverage (every element written, `semantics.properties.coverage`) and supersession (a lane
proved overwritten later need not hold the reference's value, `semantics.properties.superseded`), these are
what equivalence means for outputs written by plain stores.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from semantics.ptx.machine import Buffer, simplify
from semantics.ptx.state import Access

E_INDEX = z3.BitVec("e", 64)   # the element variable of coverage and supersession conditions


def element_index(access: Access, j: int) -> z3.BitVecRef:
    shift = access.elem_bytes.bit_length() - 1
    return simplify(z3.LShR(access.offset + j * access.elem_bytes, shift))


def hypothesis_at(access: Access, j: int, buffer: Buffer, launch_ok: z3.BoolRef) -> z3.BoolRef:
    """A thread of the launch performs the store's lane j, at an element of the buffer."""
    return z3.And(launch_ok, access.guard, z3.ULT(element_index(access, j), buffer.numel))


def lane_name(buffer: str, j: int, line: int) -> str:
    """The name of a store lane's obligation, and of its top goal."""
    return f"equivalence: {buffer} element {j} of the store at line {line}"


def goal(access: Access, j: int, buffer: Buffer, expected: z3.ExprRef, launch_ok: z3.BoolRef) -> z3.BoolRef:
    """The top goal of the store's lane j: no thread of the launch stores a value other than the
    reference's element `expected` = ref(e), ¬(hypothesis ∧ value ≠ ref(e)) (under the axiom instances its
    functions need)."""
    return z3.Not(z3.And(hypothesis_at(access, j, buffer, launch_ok), access.values[j] != expected))


def goals(stored: list[Access], buffers: dict[str, Buffer], references: dict[str, Callable],
          launch_ok: z3.BoolRef, skipped) -> list[tuple[str, z3.BoolRef]]:
    """The top goal of every lane of every store site, but the (id(site), lane) pairs in `skipped` (proved
    superseded)."""
    return [(lane_name(a.buffer, j, a.line),
             goal(a, j, buffers[a.buffer], references[a.buffer](element_index(a, j)), launch_ok))
            for a in stored for j in range(len(a.values)) if (id(a), j) not in skipped]
