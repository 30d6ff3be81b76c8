"""The machine a kernel runs on: the launch, symbolic thread coordinates, buffers and pointers.

Threads are never enumerated. One thread is a tuple of symbolic 32-bit coordinates (block id and thread
id per axis) constrained to the launch's ranges; a second, independent copy of the same variables gives
the two-thread reasoning used for races. Global memory is the set of buffers bound to pointer parameters,
each its own allocation with its real size, addressed as (buffer, byte offset).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from semantics.errors import Unsupported

AXES = ("x", "y", "z")


@dataclass(frozen=True)
class ScalarParam:
    """A symbolic integer kernel parameter of a safety-only task: `bits` wide, every value in [lo, hi]
    (signed comparisons when lo < 0). One symbol shared by every thread."""

    name: str
    bits: int
    lo: int
    hi: int

    @property
    def symbol(self) -> z3.BitVecRef:
        return z3.BitVec(f"scalar.{self.name}", self.bits)

    def in_range(self) -> z3.BoolRef:
        n = self.symbol
        if self.lo < 0:
            return z3.And(self.lo <= n, n <= self.hi)
        return z3.And(z3.UGE(n, self.lo), z3.ULE(n, self.hi))


@dataclass(frozen=True)
class Launch:
    """Grid and block dimensions; `scalars` are the symbolic parameters whose range every thread of the
    launch assumes (part of `Thread.in_launch`, so every obligation carries it)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int = 0
    scalars: tuple[ScalarParam, ...] = ()

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Thread:
    """Symbolic coordinates of one thread. `tag` keeps two threads' variables apart."""

    tag: str
    ctaid: tuple[z3.BitVecRef, z3.BitVecRef, z3.BitVecRef]
    tid: tuple[z3.BitVecRef, z3.BitVecRef, z3.BitVecRef]

    @staticmethod
    def fresh(tag: str) -> Thread:
        return Thread(
            tag,
            tuple(z3.BitVec(f"ctaid.{a}{tag}", 32) for a in AXES),
            tuple(z3.BitVec(f"tid.{a}{tag}", 32) for a in AXES),
        )

    def in_launch(self, launch: Launch) -> z3.BoolRef:
        """The range constraints that make these coordinates a thread of `launch`."""
        bounds = [z3.ULT(c, n) for c, n in zip(self.ctaid, launch.grid, strict=True)]
        bounds += [z3.ULT(t, n) for t, n in zip(self.tid, launch.block, strict=True)]
        bounds += [s.in_range() for s in launch.scalars]
        return z3.And(bounds)

    def variables(self) -> list[z3.BitVecRef]:
        return [*self.ctaid, *self.tid]

    def same_block(self, other: Thread) -> z3.BoolRef:
        return z3.And([a == b for a, b in zip(self.ctaid, other.ctaid, strict=True)])

    def same_thread(self, other: Thread) -> z3.BoolRef:
        return z3.And(self.same_block(other), *[a == b for a, b in zip(self.tid, other.tid, strict=True)])


# Named constants PTX reads like registers but writes without `%`: nvcc's `warpSize` is `mov.u32 %r, WARP_SZ;`.
CONSTANT_SYMBOLS: dict[str, int] = {"WARP_SZ": 32}


def special_registers(thread: Thread, launch: Launch) -> dict[str, z3.BitVecRef]:
    """Values of the special registers a kernel may read, as 32-bit vectors."""
    regs: dict[str, z3.BitVecRef] = {}
    for i, axis in enumerate(AXES):
        regs[f"%tid.{axis}"] = thread.tid[i]
        regs[f"%ctaid.{axis}"] = thread.ctaid[i]
        regs[f"%ntid.{axis}"] = z3.BitVecVal(launch.block[i], 32)
        regs[f"%nctaid.{axis}"] = z3.BitVecVal(launch.grid[i], 32)
    linear_tid = thread.tid[0] + thread.tid[1] * launch.block[0] + thread.tid[2] * launch.block[0] * launch.block[1]
    regs["%laneid"] = z3.URem(linear_tid, 32)  # (%warpid is a hardware slot that may change: not modelled)
    return regs


@dataclass(frozen=True)
class Buffer:
    """A global allocation bound to a pointer parameter.

    `role` is 'input' (a reference input or parameter: universally quantified contents), 'output'
    (must hold a reference output at exit), 'scratch' (a `[tensors]` buffer), 'shared' (a block's
    shared-memory array: one per block, elements of any width), 'opaque' (compiler-internal) or 'null'
    (the null pointer a `"null"` argument passes: `null_allocation`). `init`
    is the precondition on initial contents: None (arbitrary), 'zeros' or 'ones'. An `unbounded` buffer
    (safety-only tasks) has no known size: the caller guarantees its bounds, so memory safety skips it."""

    name: str
    dtype: str
    numel: int
    elem_bytes: int
    role: str
    init: str | None = None
    unbounded: bool = False
    values: tuple[int, int] | None = None   # an integer input's precondition: every element in [lo, hi]

    @property
    def size_bytes(self) -> int:
        return self.numel * self.elem_bytes

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith(("float", "bfloat"))

    def contents(self) -> z3.FuncDeclRef:
        """The buffer's initial contents as a function of the flat element index."""
        value_sort = z3.RealSort() if self.is_float else z3.BitVecSort(self.elem_bytes * 8)
        return z3.Function(f"{self.name}", z3.BitVecSort(64), value_sort)


def null_allocation(position: int) -> Buffer:
    """What the null pointer passed as kernel argument `position` points into: an allocation of no bytes, so
    every access through it is out of bounds (a memory-safety finding), whatever its width. Its address is
    its offset (`address_is_zero`)."""
    return Buffer(f"null_arg{position}", "uint8", 0, 1, "null")


@dataclass(frozen=True)
class Pointer:
    """An address with provenance: `offset` bytes into `buffer` in state space `space`.

    Registers holding addresses carry this instead of a bare integer, so every access is checked
    against the allocation it was derived from, and arithmetic that would lose provenance is refused."""

    space: str
    buffer: str
    offset: z3.BitVecRef

    def moved(self, delta: z3.BitVecRef) -> Pointer:
        """The pointer `delta` bytes further. A 32-bit delta comes from 32-bit (shared-window) address
        arithmetic, where it wraps: sign-extending it gives the same address."""
        if delta.size() < 64:
            delta = z3.SignExt(64 - delta.size(), delta)
        return Pointer(self.space, self.buffer, simplify(self.offset + delta))


def address_is_zero(pointer: Pointer, buffer: Buffer) -> z3.BoolRef:
    """Whether a global pointer's address is 0, the machine model's one pointer comparison (`p != nullptr`).
    A null pointer's address is its offset. A pointer to a bound allocation, unmoved, is never 0 (an
    allocation never sits at address 0); a moved one is not modelled, as it could only be 0 by wrapping."""
    if buffer.role == "null":
        return pointer.offset == 0
    if pointer.space != "global" or not z3.is_bv_value(pointer.offset) or pointer.offset.as_long() != 0:
        raise Unsupported(f"a comparison of a pointer into {buffer.name} with 0 (only an unmoved global pointer's "
                          f"is modelled)")
    return z3.BoolVal(False)


DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
               "int32": 4, "int64": 8, "bool": 1}


def simplify(term: z3.ExprRef) -> z3.ExprRef:
    """z3's simplifier, keeping sign extensions as such (the default rewrites them into bit concatenations,
    which hides the affine index structure that provers and people read)."""
    return z3.simplify(term, elim_sign_ext=False)
