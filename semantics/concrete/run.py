"""Running the threads of given blocks: the scheduler and the public entry point `run_blocks`.

Within a block every thread runs alone until it exits or reaches an instruction where threads meet. When
all are stopped, warp-synchronous instructions run for the lanes gathered at them; when only block
barriers remain, every live thread must wait at the same barrier (else: barrier divergence, recorded, and
the waiting threads are released as hardware would) and the block's barrier interval advances. A block's
threads run in linear-id order; in a race-free interval the order does not change the result, and a race
is recorded as a violation. Blocks run one after another.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import z3

from semantics.errors import Unsupported
from semantics.ptx.ast import Kernel
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.types import TYPES

from .memory import Access, BlockEnded, Coord, Halt, Memory, SparseBuffer, Stopped, Violation
from .program import EXIT, Program
from .values import ALLOCATION_BASE, MPF, Ptr, mask, real

DEFAULT_MAX_STEPS = 50_000_000


class BudgetExceeded(Unsupported):
    """The run executed more instructions than its budget allows."""


@dataclass
class RunResult:
    """What a run did: final global memory (`final`), every recorded access, the violations seen, the barrier
    lines each thread passed, and the number of instructions executed. `completed` is False when a halting
    violation (`halted`) or the caller's `stop` ended the run early."""

    memory: Memory
    violations: list[Violation]
    barriers: dict[tuple[Coord, Coord], tuple[int, ...]] = field(default_factory=dict)
    steps: int = 0
    halted: Violation | None = None
    stopped: bool = False

    @property
    def completed(self) -> bool:
        return self.halted is None and not self.stopped

    @property
    def accesses(self) -> list[Access]:
        return self.memory.accesses

    @property
    def written(self) -> dict[str, dict[int, object]]:
        """Per buffer, every element some thread wrote, with its final value."""
        return self.memory.written

    def final(self, buffer: str, index: int) -> object:
        """The element's value after the run (its initial value when no thread wrote it)."""
        return self.memory.final(buffer, index)


class Thread:
    __slots__ = ("regs", "pc", "tid", "lane", "warp", "phase", "barriers", "done", "local", "local_sizes")

    def __init__(self, regs: dict, tid: Coord, linear: int, local_sizes: dict[str, int]):
        self.regs, self.tid, self.pc = regs, tid, 0
        self.lane, self.warp = linear % 32, linear // 32
        self.phase, self.barriers, self.done = 0, [], False
        self.local = {name: {} for name in local_sizes}
        self.local_sizes = local_sizes


def _special(launch: Launch, block: Coord, tid: Coord) -> tuple[dict, int]:
    bx, by, _ = launch.block
    linear = tid[0] + tid[1] * bx + tid[2] * bx * by
    lane = linear % 32
    regs = {"%laneid": lane, "%warpid": linear // 32, "%nwarpid": -(-launch.threads_per_block // 32),
            "%lanemask_eq": 1 << lane, "%lanemask_lt": (1 << lane) - 1, "%lanemask_le": (1 << (lane + 1)) - 1,
            "%lanemask_gt": mask(32) ^ ((1 << (lane + 1)) - 1), "%lanemask_ge": mask(32) ^ ((1 << lane) - 1)}
    for i, axis in enumerate("xyz"):
        regs[f"%tid.{axis}"], regs[f"%ntid.{axis}"] = tid[i], launch.block[i]
        regs[f"%ctaid.{axis}"], regs[f"%nctaid.{axis}"] = block[i], launch.grid[i]
    return regs, linear


def _param(param_type: str, arg: object, scalars: dict[str, object]) -> object:
    """A kernel parameter's concrete value: a pointer to a buffer, an integer's bits, a float's real (a 32-bit
    float parameter holds the literal rounded to f32, as `semantics.ptx.bind` binds it)."""
    ty = TYPES.get(param_type)
    if ty is None:
        raise Unsupported(f"kernel parameter of type {param_type}")
    if isinstance(arg, SparseBuffer):
        arg = arg.buffer
    if isinstance(arg, Buffer):
        return Ptr("global", arg.name, 0, 0 if arg.role == "null" else ALLOCATION_BASE)
    if isinstance(arg, z3.ExprRef):
        if str(arg) not in scalars:
            raise Unsupported(f"scalar input `{arg}` has no concrete value")
        arg = scalars[str(arg)]
    if isinstance(arg, bool | int) and not ty.is_float:
        return int(arg) & mask(ty.bits)
    if ty.is_float and ty.bits == 32 and isinstance(arg, int | float):
        return real(struct.unpack("<f", struct.pack("<f", float(arg)))[0])
    if ty.is_float:
        return real(arg)
    if isinstance(arg, MPF | float) and float(arg).is_integer():
        return int(arg) & mask(ty.bits)
    raise Unsupported(f"argument {arg!r} for a {param_type} parameter")


class Scheduler:
    def __init__(self, program: Program, launch: Launch, memory: Memory, max_steps: int):
        self.p, self.launch, self.mem, self.max_steps = program, launch, memory, max_steps
        self.steps = 0
        self.barriers: dict[tuple[Coord, Coord], tuple[int, ...]] = {}
        self.local_sizes = {name: size for name, size in memory.local_sizes.items()}

    def block(self, block: Coord, tids: list[Coord]) -> None:
        self.mem.start_block(block)
        threads = []
        for tid in tids:
            regs, linear = _special(self.launch, block, tid)
            threads.append(Thread(regs, tid, linear, self.local_sizes))
        runnable, diverged = threads, False
        try:
            while True:
                for t in runnable:
                    self._run(t)
                waiting = [t for t in threads if not t.done]
                if not waiting:
                    break
                runnable = self._warps(waiting)
                if not runnable:
                    self.mem.end_interval()
                    runnable, diverged = self._barrier(block, threads, waiting, diverged)
            self.mem.end_interval()
        except BlockEnded:
            pass                  # the interval is cut short: its unfinished shared reads are no holes
        finally:
            for t in threads:
                self.barriers[(block, t.tid)] = tuple(t.barriers)
        self.mem.end_block()

    def _run(self, t: Thread) -> None:
        code, pc, steps, limit = self.p.code, t.pc, self.steps, self.max_steps
        try:
            while pc >= 0:
                pc = code[pc](t)
                steps += 1
                if steps > limit:
                    raise BudgetExceeded(f"more than {limit} instructions executed")
        except KeyError as exc:
            name = exc.args[0] if exc.args else None
            if not (isinstance(name, str) and name.startswith("%")):
                raise
            line = self.p.lines[pc]
            self.mem.violation(Violation("undefined_register", self.mem.block, t.tid, line,
                                         f"register {name} is read before any write on the path of block "
                                         f"{list(self.mem.block)} thread {list(t.tid)} (line {line})"))
        except Unsupported as exc:
            if exc.where is None and not isinstance(exc, BudgetExceeded):
                raise Unsupported(exc.feature, f"line {self.p.lines[pc]}") from None
            raise
        finally:
            self.steps = steps
        if pc == EXIT:
            t.done = True

    def _warps(self, waiting: list[Thread]) -> list[Thread]:
        """Run every warp-synchronous instruction some lanes wait at; returns the lanes released."""
        groups: dict[tuple[int, int], list[Thread]] = {}
        for t in waiting:
            if self.p.collectives[t.pc][0] == "warp":
                groups.setdefault((t.warp, t.pc), []).append(t)
        released = []
        for (_warp, pc), lanes in groups.items():
            lanes.sort(key=lambda t: t.lane)
            try:
                self.p.collectives[pc][1](lanes)
            except Unsupported as exc:
                raise Unsupported(exc.feature, exc.where or f"line {self.p.lines[pc]}") from None
            for t in lanes:
                t.pc = pc + 1
            released += lanes
        return released

    def _barrier(self, block: Coord, threads: list[Thread], waiting: list[Thread],
                 diverged: bool) -> tuple[list[Thread], bool]:
        """Every live thread waits at a block barrier: one barrier interval ends."""
        lines = {self.p.lines[t.pc] for t in waiting}
        exited = [t for t in threads if t.done]
        if not diverged and (exited or len(lines) > 1):
            a = waiting[0]
            b = exited[0] if exited else next(t for t in waiting if self.p.lines[t.pc] != self.p.lines[a.pc])
            what = "has exited" if exited else f"waits at the barrier at line {self.p.lines[b.pc]}"
            self.mem.violation(Violation(
                "barrier_divergence", block, a.tid, self.p.lines[a.pc],
                f"barrier divergence in block {list(block)}: thread {list(a.tid)} waits at the barrier at line "
                f"{self.p.lines[a.pc]} while thread {list(b.tid)} {what}", other=(block, b.tid),
                other_line=None if exited else self.p.lines[b.pc]))
            diverged = True
        for t in waiting:
            t.barriers.append(self.p.lines[t.pc])
            t.phase += 1
            t.pc += 1
        return waiting, diverged


def _coord(c: Iterable[int] | int) -> Coord:
    if isinstance(c, int):
        return (c, 0, 0)
    x, y, z = (*tuple(c), 0, 0)[:3]
    return (int(x), int(y), int(z))


def _all_threads(launch: Launch) -> list[Coord]:
    bx, by, bz = launch.block
    return [(x, y, z) for z in range(bz) for y in range(by) for x in range(bx)]


def run_blocks(kernel: Kernel, launch: Launch, args: list[object], buffers: dict[str, SparseBuffer | Buffer],
               blocks: Iterable, *, threads: Iterable | None = None, max_steps: int = DEFAULT_MAX_STEPS,
               stop: Callable[[Access | Violation], bool] | None = None, scalars: dict[str, object] | None = None,
               record: bool = True, first: Iterable | None = None) -> RunResult:
    """Run every thread of each block in `blocks` (coordinates (x, y, z)) of `kernel` under `launch`.

    `args` are the kernel parameters in order as `semantics.verdict.Problem.args` holds them (a Buffer, a
    literal, or a z3 symbol whose value `scalars` gives by name); `buffers` maps every global buffer's name to
    a `SparseBuffer` (a bare Buffer is filled by its `init`, else 0). `threads` runs only those threads of
    each block, allowed only when the kernel's threads cannot interact (no barrier, shared memory, warp
    exchange or atomic). `stop(event)` sees every access and violation and ends the run by returning True, or
    only the current block's run, at an access, by returning `END_BLOCK`.
    More than `max_steps` instructions raise `BudgetExceeded`; an instruction outside the fragment raises
    `Unsupported` (the run cannot say what the kernel does). Violations that leave no defined value (out of
    bounds, misaligned, an undefined register) end the run (`halted`). `first` names threads to run first in
    every barrier interval (in a race-free interval the order changes nothing; a witness's thread then
    meets its violation before any other thread's ends the run)."""
    sparse = {name: b if isinstance(b, SparseBuffer) else SparseBuffer(b) for name, b in buffers.items()}
    variables, shared_sizes, local_sizes = {}, {}, {}
    for var in kernel.vars:
        if var.space == ".shared":
            variables[var.name] = "shared"
            shared_sizes[var.name] = launch.dynamic_shared_bytes if var.size_bytes is None else var.size_bytes
        elif var.space == ".local":
            variables[var.name] = "local"
            local_sizes[var.name] = var.size_bytes or 0
    params = {p.name: _param(p.type, a, scalars or {}) for p, a in zip(kernel.params, args, strict=True)}
    blocks = [_coord(b) for b in blocks]
    memory = Memory(sparse, shared_sizes, record, stop, across_blocks=len(set(blocks)) > 1)
    memory.local_sizes = local_sizes
    program = Program(kernel, params, memory, variables)
    chosen = _all_threads(launch) if threads is None else [_coord(t) for t in threads]
    if first is not None:
        ahead = [_coord(t) for t in first]
        chosen = [t for t in ahead if t in chosen] + [t for t in chosen if t not in ahead]
    if threads is not None and program.interacting:
        raise Unsupported(f"the threads of this kernel interact ({program.interacting}): run whole blocks")
    scheduler = Scheduler(program, launch, memory, max_steps)
    result = RunResult(memory, memory.violations)
    try:
        for block in blocks:
            if not all(0 <= c < n for c, n in zip(block, launch.grid, strict=True)):
                raise ValueError(f"block {list(block)} is outside the grid {list(launch.grid)}")
            scheduler.block(block, chosen)
    except Halt as exc:
        result.halted = exc.violation
    except Stopped:
        result.stopped = True
    result.barriers, result.steps = scheduler.barriers, scheduler.steps
    return result
