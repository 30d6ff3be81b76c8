"""Memory of a concrete run: sparse global buffers, per-block shared memory, per-thread local memory, and the
record of every access with the violations it shows.

Global memory is sparse: a buffer has its real size, a dict of listed element values and one fill value for
every other element; writes go into a dict. Nothing is allocated per element of a tensor. Shared and local
memory hold values per element offset, untyped (a float stored as `.b32` stays a real).

Races are found per location and barrier interval: two threads of one block touching one element in one
interval, at least one a plain (non-atomic) write, or any such pair among different blocks of the run.
Two lanes of one warp storing the same value at the same instruction are one write (the warp-uniform
store Triton emits, as `semantics/properties/warp_stores.py` models it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from semantics.errors import Unsupported
from semantics.ptx.machine import Buffer

from .values import MPF, UNDEFINED, Ptr, Undefined, kind, real, real_of_bits

Coord = tuple[int, int, int]


class Access(NamedTuple):
    """One element access: `offset` is the element's byte offset in `buffer`, `width` its bytes; `value` is
    what a load read or a store/atomic wrote; `phase` counts the block's barriers passed before it."""

    block: Coord
    thread: Coord
    kind: str            # 'load' | 'store' | 'atomic'
    space: str           # 'global' | 'shared' | 'local'
    buffer: str
    offset: int
    width: int
    value: object
    phase: int
    line: int


@dataclass
class Violation:
    """What the run saw go wrong. `kind` is one of KINDS; `other` names the second thread of a race or a
    divergence, as (block, thread)."""

    kind: str
    block: Coord
    thread: Coord
    line: int
    detail: str
    buffer: str | None = None
    offset: int | None = None        # bytes
    other: tuple[Coord, Coord] | None = None
    other_line: int | None = None


KINDS = ("out_of_bounds", "misaligned", "undefined_register", "uninitialized_shared", "barrier_divergence", "race")
HALTING = frozenset({"out_of_bounds", "misaligned", "undefined_register"})


class Halt(Exception):
    """A violation after which the run cannot continue (the access has no defined value)."""

    def __init__(self, violation: Violation):
        super().__init__(violation.detail)
        self.violation = violation


@dataclass
class SparseBuffer:
    """A global buffer: `values` lists some elements (index -> value), `fill` is every other element's value.
    Float elements are reals, integer elements the unsigned pattern of the element width."""

    buffer: Buffer
    values: dict[int, object] = field(default_factory=dict)
    fill: object = None

    def __post_init__(self) -> None:
        if self.fill is None:
            self.fill = 1 if self.buffer.init == "ones" else 0
        self.fill = self._element(self.fill)
        self.values = {int(i): self._element(v) for i, v in self.values.items()}

    def _element(self, v: object) -> object:
        if self.buffer.is_float:
            return real(v)
        bits = self.buffer.elem_bytes * 8
        if isinstance(v, MPF) or not float(v).is_integer():
            raise Unsupported(f"a non-integer value {v} for integer buffer {self.buffer.name}")
        return int(v) & ((1 << bits) - 1)

    def stored(self, v: object) -> object:
        """A register's value as this buffer's element: integer bits stored into a float buffer are decoded."""
        bits = self.buffer.elem_bytes * 8
        if type(v) is Undefined:
            return v
        if self.buffer.is_float:
            if type(v) is MPF:
                return v
            if type(v) is int:
                return real_of_bits(v, bits, self.buffer.dtype == "bfloat16")
        elif type(v) is int:
            return v & ((1 << bits) - 1)
        raise Unsupported(f"{kind(v)} stored into {self.buffer.dtype} buffer {self.buffer.name}")

    def initial(self, index: int) -> object:
        return self.values.get(index, self.fill)


class Conflicts:
    """Who touched each location. `current`: location -> [barrier interval, entries (kind, thread, warp, line,
    value)], at most two distinct threads per kind (enough to name one other than any given thread);
    `block`: this block's global locations over all its intervals; `finished`: the blocks already run (kept
    only when more than one block runs)."""

    def __init__(self, across_blocks: bool) -> None:
        self.current: dict[tuple, list] = {}
        self.block: dict[tuple, tuple] = {}
        self.finished: dict[tuple, tuple] = {}
        self.across_blocks = across_blocks


CONFLICTING = {"load": frozenset({"store", "atomic"}), "store": frozenset({"load", "store", "atomic"}),
               "atomic": frozenset({"load", "store"})}
PER_KIND = 2


def _added(entries: tuple, entry: tuple) -> tuple:
    """`entries` with `entry` (kind, who, ...) unless its kind already has it or PER_KIND others."""
    same = [e for e in entries if e[0] == entry[0]]
    if len(same) >= PER_KIND or any(e[1] == entry[1] for e in same):
        return entries
    return (*entries, entry)


class Memory:
    """The memory of one run and the recorder of its accesses."""

    def __init__(self, buffers: dict[str, SparseBuffer], shared_sizes: dict[str, int], record: bool, stop,
                 across_blocks: bool = True):
        self.globals = buffers
        self.written: dict[str, dict[int, object]] = {name: {} for name in buffers}
        self.shared_sizes = shared_sizes
        self.local_sizes: dict[str, int] = {}
        self.pending: list[tuple[Violation, int]] = []
        self.shared: dict[str, dict[int, tuple[int, object]]] = {}
        self.widths: dict[str, set[int]] = {}      # element widths stored per shared/local buffer
        self.accesses: list[Access] = []
        self.violations: list[Violation] = []
        self.record = record
        self.stop = stop
        self.conflicts = Conflicts(across_blocks)
        self.block: Coord = (0, 0, 0)

    # ------------------------------------------------------------ blocks

    def start_block(self, block: Coord) -> None:
        self.block = block
        self.shared = {name: {} for name in self.shared_sizes}
        self.pending: list[tuple[Violation, int]] = []
        self.conflicts.current = {}
        self.conflicts.block = {}

    def end_block(self) -> None:
        c = self.conflicts
        for key, entries in c.block.items():
            merged = c.finished.get(key, ())
            for e in entries:
                merged = _added(merged, e)
            c.finished[key] = merged

    # ------------------------------------------------------------ events

    def violation(self, v: Violation) -> None:
        self.violations.append(v)
        if v.kind in HALTING:
            raise Halt(v)
        if self.stop is not None and self.stop(v):
            raise Stopped()

    def note(self, t, kind: str, space: str, buffer: str, offset: int, width: int, value: object, line: int) -> None:
        if self.record or self.stop is not None:
            access = Access(self.block, t.tid, kind, space, buffer, offset, width, value, t.phase, line)
            if self.record:
                self.accesses.append(access)
            if self.stop is not None and (asked := self.stop(access)):
                raise BlockEnded() if asked == END_BLOCK else Stopped()
        if space != "local":
            self._check_race(t, kind, (space, buffer, offset), value, line)

    def _check_race(self, t, kind: str, key: tuple, value: object, line: int) -> None:
        c = self.conflicts
        rec = c.current.get(key)
        entry = (kind, t.tid, t.warp, line, value)
        if rec is None or rec[0] != t.phase:
            c.current[key] = [t.phase, (entry,)]
        else:
            conflicting = CONFLICTING[kind]
            for other_kind, who, warp, other_line, other_value in rec[1]:
                if who == t.tid or other_kind not in conflicting:
                    continue
                if kind == other_kind == "store" and warp == t.warp and other_line == line and other_value == value:
                    continue   # a warp-uniform store: one write
                self._race(t, kind, key, line, (self.block, who), other_kind, other_line)
                break
            rec[1] = _added(rec[1], entry)
        if c.across_blocks and key[0] == "global":
            conflicting = CONFLICTING[kind]
            for other_kind, other, _warp, other_line, _value in c.finished.get(key, ()):
                if other_kind in conflicting:
                    self._race(t, kind, key, line, other, other_kind, other_line, cross=True)
                    break
            c.block[key] = _added(c.block.get(key, ()), (kind, (self.block, t.tid), t.warp, line, value))

    def _race(self, t, kind: str, key: tuple, line: int, other: tuple, other_kind: str, other_line: int,
              cross: bool = False) -> None:
        space, buffer, offset = key
        whom = f"block {list(other[0])} thread {list(other[1])}" if cross else f"thread {list(other[1])}"
        self.violation(Violation(
            "race", self.block, t.tid, line,
            f"data race on {buffer} at byte offset {offset}: block {list(self.block)} thread {list(t.tid)} "
            f"{kind}s it (line {line}) while {whom} {other_kind}s it (line {other_line})",
            buffer, offset, other, other_line))

    # ------------------------------------------------------------ global

    def global_buffer(self, t, ptr: Ptr, width: int, elem_bytes: int, kind: str, line: int) -> SparseBuffer:
        """The buffer an access goes to, after its bounds and alignment are checked."""
        sb = self.globals.get(ptr.buffer)
        if sb is None:
            raise Unsupported(f"an access through parameter `{ptr.buffer}`, which no buffer is bound to")
        b = sb.buffer
        if b.role == "opaque":
            raise Unsupported(f"an access through compiler-internal parameter `{b.name}`")
        if b.role == "null":
            self.violation(Violation(
                "out_of_bounds", self.block, t.tid, line,
                f"{kind} through the null pointer {b.name} ({width} bytes at byte offset {ptr.offset}, line {line})",
                ptr.buffer, ptr.offset))
        if elem_bytes != b.elem_bytes:
            raise Unsupported(f"{elem_bytes}-byte elements accessed in `{b.name}` ({b.dtype})")
        # an unbounded buffer (a safety-only task's caller guarantees its bounds) has no end to check
        self._bounds(t, ptr, width, 1 << 64 if b.unbounded else b.numel * b.elem_bytes, b.elem_bytes, kind, line)
        return sb

    def _bounds(self, t, ptr: Ptr, width: int, size: int, unit: int, kind: str, line: int) -> None:
        """In bounds and aligned to the access's width; messages count elements of the access's `unit` bytes."""
        off = ptr.offset
        if off < 0 or off + width > size:
            self.violation(Violation(
                "out_of_bounds", self.block, t.tid, line,
                f"{kind} of {ptr.buffer}[{off // unit}] ({width} bytes at byte offset {off}) is out of bounds: "
                f"{ptr.buffer} has {size // unit} elements of {unit} bytes (line {line})", ptr.buffer, off))
        if off % min(width, 16):
            self.violation(Violation(
                "misaligned", self.block, t.tid, line,
                f"{kind} of {width} bytes at byte offset {off} of {ptr.buffer} is misaligned (line {line})",
                ptr.buffer, off))

    def load_global(self, t, ptr: Ptr, n: int, elem_bytes: int, line: int) -> list:
        sb = self.global_buffer(t, ptr, n * elem_bytes, elem_bytes, "load", line)
        written, listed, fill = self.written[ptr.buffer], sb.values, sb.fill
        first = ptr.offset
        out = []
        for j in range(n):
            off = first + j * elem_bytes
            i = off // elem_bytes
            v = written[i] if i in written else listed.get(i, fill)
            self.note(t, "load", "global", ptr.buffer, off, elem_bytes, v, line)
            out.append(v)
        return out

    def store_global(self, t, ptr: Ptr, values: list, elem_bytes: int, line: int, kind: str = "store") -> None:
        sb = self.global_buffer(t, ptr, len(values) * elem_bytes, elem_bytes, kind, line)
        written = self.written[ptr.buffer]
        base = ptr.offset // elem_bytes
        for j, v in enumerate(values):
            v = sb.stored(v)
            written[base + j] = v
            self.note(t, kind, "global", ptr.buffer, (base + j) * elem_bytes, elem_bytes, v, line)

    def current_global(self, ptr: Ptr, elem_bytes: int) -> object:
        i = ptr.offset // elem_bytes
        written = self.written[ptr.buffer]
        return written[i] if i in written else self.globals[ptr.buffer].initial(i)

    # ------------------------------------------------------------ shared and local

    def cells(self, t, ptr: Ptr) -> tuple[dict, int]:
        if ptr.space == "shared":
            return self.shared[ptr.buffer], self.shared_sizes[ptr.buffer]
        if ptr.space == "local":
            return t.local[ptr.buffer], t.local_sizes[ptr.buffer]
        raise Unsupported(f"{ptr.space} memory")

    def load_cells(self, t, ptr: Ptr, n: int, elem_bytes: int, line: int) -> list:
        cells, size = self.cells(t, ptr)
        self._bounds(t, ptr, n * elem_bytes, size, elem_bytes, "load", line)
        out = []
        for j in range(n):
            off = ptr.offset + j * elem_bytes
            cell = cells.get(off)
            if cell is None or cell[0] != elem_bytes:
                self._unwritten(t, ptr, off, elem_bytes, cells, line)
                cell = (elem_bytes, UNDEFINED)
            self.note(t, "load", ptr.space, ptr.buffer, off, elem_bytes, cell[1], line)
            out.append(cell[1])
        return out

    def current_cell(self, t, ptr: Ptr, elem_bytes: int, line: int) -> object:
        """An element's value for an atomic's read-modify-write (the atomic itself is the recorded access)."""
        cells, size = self.cells(t, ptr)
        self._bounds(t, ptr, elem_bytes, size, elem_bytes, "atomic", line)
        off = ptr.offset
        cell = cells.get(off)
        if cell is None or cell[0] != elem_bytes:
            self._unwritten(t, ptr, off, elem_bytes, cells, line)
            return UNDEFINED
        return cell[1]

    def _unwritten(self, t, ptr: Ptr, off: int, elem_bytes: int, cells: dict, line: int) -> None:
        overlapping = [o for o in range(off - 15, off + elem_bytes) if o in cells and o + cells[o][0] > off]
        if overlapping:
            raise Unsupported(f"a {elem_bytes}-byte read of {ptr.buffer} at byte {off} that other element widths "
                              f"wrote (line {line})")
        found = Violation("uninitialized_shared", self.block, t.tid, line,
                          f"{ptr.space} read of {ptr.buffer} at byte offset {off} by block {list(self.block)} thread "
                          f"{list(t.tid)} reads memory no thread wrote before it (line {line})", ptr.buffer, off)
        if ptr.space == "local":
            self.violation(found)
        else:   # unless another thread writes it later in this interval (a race, not a hole): `end_interval`
            self.pending.append((found, t.phase))

    def end_interval(self) -> None:
        """A barrier interval of the block ends: a shared read that found nothing is a hole if no other thread
        wrote the element in the same interval (if one did, the read raced with it, which is recorded)."""
        pending, self.pending = self.pending, []
        for found, phase in pending:
            rec = self.conflicts.current.get(("shared", found.buffer, found.offset))
            if rec is None or rec[0] != phase or not any(e[0] != "load" and e[1] != found.thread for e in rec[1]):
                self.violation(found)

    def store_cells(self, t, ptr: Ptr, values: list, elem_bytes: int, line: int, kind: str = "store") -> None:
        cells, size = self.cells(t, ptr)
        self._bounds(t, ptr, len(values) * elem_bytes, size, elem_bytes, kind, line)
        for j, v in enumerate(values):
            off = ptr.offset + j * elem_bytes
            widths = self.widths.setdefault(ptr.buffer, set())
            widths.add(elem_bytes)
            if len(widths) > 1:   # elements of one width never overlap (each is aligned to its width)
                for o in range(off - 15, off + elem_bytes):
                    if o in cells and o != off and o + cells[o][0] > off:
                        del cells[o]   # a narrower or wider element it overwrites
            cells[off] = (elem_bytes, v)
            self.note(t, kind, ptr.space, ptr.buffer, off, elem_bytes, v, line)

    # ------------------------------------------------------------ results

    def final(self, buffer: str, index: int) -> object:
        written = self.written[buffer]
        return written[index] if index in written else self.globals[buffer].initial(index)


class Stopped(Exception):
    """The caller's `stop` callback asked to end the run."""


END_BLOCK = "end block"   # what `stop` returns to end the current block's run here and go on with the next


class BlockEnded(Exception):
    """The caller's `stop` callback asked to end this block's run at an access: the threads of the block that
    have not run yet stay where they are, as a legal schedule may leave them (no block waits for another)."""
