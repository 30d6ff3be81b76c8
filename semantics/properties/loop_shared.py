"""What a shared read inside a loop with barriers sees: the value stored earlier in the same iteration.

A tiled kernel loads a tile into shared memory, waits, reads the tile, and waits again before the next
iteration overwrites it. When the loop is summarised (`semantics.ptx.symexec`), its generic run gives every
shared read after a barrier of the body the placeholder `R(i, o)`: the value read at iteration i from byte
offset o (one function per buffer and loop, `semantics.ptx.memory._loop_read`); accumulations over such
reads become comprehensions over `R(j, o(j))`. Here, with every store known, R is defined as

    R(i, o) = If(c₁(w, i, o), v₁(w, i), If(c₂(w, i, o), v₂(w, i), … vₙ(w, i)))

over the records (one per path) of the buffer's single store instruction, where w = w(o) is the writer
thread (a hint: an inverse of the store's offset), cᵣ says that w's path through iteration i is record r's
and stores at o, and vᵣ is the value it stores there. Conjuncts shared by every record (the loop's reach
guard, the conditions to enter the loop) are dropped from the cᵣ; see below why that is exact.

Why the read sees exactly R(k, o), for a reader at iteration k reading offset o (every premise is either a
syntactic check here or an obligation whose unsat proves it):

* syntactic: every store to the buffer in the whole kernel is one instruction in this loop's body (no other
  loop, no atomics), executed at barrier segment p_s of an iteration, and every read of the placeholder is
  at a segment p_r > p_s of the same iteration (phase P₀ + k·b + p, `semantics.ptx.loop_phases`), with one
  stored value of the read's width.
* happens (obligation): for every reader in the launch whose read record's guard holds, o is aligned and the
  hinted writer w is a thread of the reader's block that, at the same iteration k, takes some record r's
  path and stores at exactly o. Barrier uniformity (proved separately, required for `verified`) makes
  "the same iteration" the same phase P₀ + k·b + p_s for both threads, so the store precedes the read
  across at least one barrier. This is also the proof that every such read is initialised (memory
  safety, `loop_initialized`).
* unique (obligation, per record): no other thread of the block stores bytes overlapping [o, o+width) at
  the same iteration.
* nothing in between: a store that the read could see instead lies in a phase in [P₀+k·b+p_s, P₀+k·b+p_r].
  The only store instruction runs in phases P₀+k'·b+p_s, which lie there only for k' = k because
  0 < p_r - p_s ≤ b (a segment-b read shares its phase with segment 0 of iteration k+1: equal phases mean
  a store there by another thread would be a race, and by the reader itself p_s = p_r, excluded). At
  k' = k only w stores the bytes (unique). Races between phases are ruled out by the race check, which
  must also be proved for `verified`.
* exactness of the chain: records of one instruction on different paths have contradicting branch
  conditions, so for w at iteration k exactly one record's full guard holds (the one "happens" found);
  dropping conjuncts common to all records keeps exactly that one true among the cᵣ.

A placeholder for which any premise fails becomes an opaque function of (iteration, offset), marked by an
opaque constant (properties that depend on it are unknown), never a guess.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.properties.common import rename_apart
from semantics.properties.races import OTHER
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access, KernelContext, LoopRead

BV64 = z3.BitVecSort(64)


def _conjuncts(term: z3.BoolRef) -> list[z3.BoolRef]:
    if z3.is_and(term):
        return [c for child in term.children() for c in _conjuncts(child)]
    return [term]


def _strip(guard: z3.BoolRef, common: list[z3.BoolRef]) -> z3.BoolRef:
    kept = [c for c in _conjuncts(guard) if not any(z3.eq(c, d) for d in common)]
    return z3.And(kept) if kept else z3.BoolVal(True)


def _overlaps(a: z3.BitVecRef, b: z3.BitVecRef, width: int) -> z3.BoolRef:
    """Byte ranges [a, a+width) and [b, b+width) intersect."""
    return z3.And(z3.ULT(a, b + width), z3.ULT(b, a + width))


class LoopShared:
    def __init__(self, ctx: KernelContext, launch: Launch, shared: set[str], propose, checker: Checker,
                 timeout_s: float, record, accepted: dict):
        self.ctx, self.thread, self.launch, self.shared = ctx, ctx.thread, launch, shared
        self.propose, self.checker, self.timeout_s, self.record, self.accepted = (propose, checker, timeout_s,
                                                                                  record, accepted)

    def run(self) -> None:
        macros = []
        for name, read in sorted(self.ctx.loop_reads.items()):
            why = self._premises(read)
            body = self._define(read) if why is None else None
            if body is None:
                # opaque, but still a function of (iteration, offset): reads of different elements must not
                # cancel each other algebraically; the opaque constant marks every use as unmodelled
                opaque = z3.Const(f"opaque!{name}", z3.BoolSort())
                self.ctx.opaque[str(opaque)] = (f"the shared reads of {read.buffer} at lines {sorted(read.lines)} in "
                                                f"a loop with barriers: "
                                                f"{why or 'their same-iteration writer was not proved'}")
                unknown = z3.Function(f"unmodelled!{name}", BV64, BV64, z3.BoolSort(), read.func.range())
                body = unknown(z3.Var(0, BV64), z3.Var(1, BV64), opaque)
            else:
                self.ctx.loop_initialized |= read.lines
                self.ctx.assumes_initialized = True
            macros.append((read.func, body))
        if not macros:
            return
        for access in self.ctx.accesses:
            access.guard = z3.substitute_funs(access.guard, *macros)
            access.offset = z3.substitute_funs(access.offset, *macros)
            access.values = tuple(z3.substitute_funs(v, *macros) for v in access.values)

    # ------------------------------------------------------------ syntactic premises

    def _stores(self, read: LoopRead) -> list[Access]:
        return [a for a in self.ctx.accesses if a.space == "shared" and a.buffer == read.buffer and a.kind != "load"]

    def _loads(self, read: LoopRead) -> list[Access]:
        return [a for a in self.ctx.accesses if a.space == "shared" and a.kind == "load" and a.line in read.lines]

    def _premises(self, read: LoopRead) -> str | None:
        """Why R cannot be defined by the same-iteration store, or None when the syntactic premises hold."""
        loop = read.loop
        if loop is None or not loop.barriers:
            return "the loop has no barriers"
        stores, loads = self._stores(read), self._loads(read)
        if not stores:
            return "no store writes the buffer"
        if len({s.line for s in stores}) != 1 or any(s.kind != "store" for s in stores):
            return "more than one instruction writes the buffer"
        inside = ((loop, loop.k),)
        for s in stores:
            if s.loops != inside or len(s.values) != 1 or s.width != read.elem_bytes or s.elem_bytes != read.elem_bytes:
                return f"the store at line {s.line} is not a one-element store in this loop's body"
        segments = {s.phase - read.base for s in stores}
        if len(segments) != 1:
            return "the store runs after different numbers of barriers"
        (p_s,) = segments
        if not (0 <= p_s < min(read.segments) and max(read.segments) <= len(loop.barriers)):
            return "a read is not after the store's barrier interval in the same iteration"
        if not loads or any(ld.loops != inside or ld.phase - read.base not in read.segments for ld in loads):
            return "a read is not in this loop's body"
        return None

    # ------------------------------------------------------------ the definition and its obligations

    def _define(self, read: LoopRead) -> z3.ExprRef | None:
        """R's body over Var(0) (iteration) and Var(1) (byte offset), or None when an obligation fails."""
        stores, loads, k = self._stores(read), self._loads(read), read.loop.k
        o = z3.BitVec(f"o!{read.func.name()}", 64)
        shift = read.elem_bytes.bit_length() - 1
        tids = list(self.thread.tid)
        key = f"loop_shared:{read.buffer}:line{stores[0].line}"
        hint = self.propose(key, z3.LShR(stores[0].offset, shift), tids, z3.LShR(o, shift))
        if hint is None:
            return None
        writer = [(t, hint[str(t)]) for t in tids]
        for s in stores:  # the writer is w, not this thread: only its coordinates may be thread-local
            pairs = rename_apart([s.guard, s.offset, s.values[0]], self.thread, OTHER, self.shared | {str(k)})
            if any(str(a) not in {str(v) for v in self.thread.variables()} for a, _ in pairs):
                return None
        reads = [z3.And(ld.guard, z3.Or([o == ld.offset + n * read.elem_bytes
                                         for n in range(ld.width // read.elem_bytes)]))
                 for ld in loads]
        reader = z3.And(self.thread.in_launch(self.launch), z3.Or(reads))
        in_block = z3.And([z3.ULT(w, n) for (_, w), n in zip(writer, self.launch.block, strict=True)])
        wrote = [z3.And(z3.substitute(s.guard, *writer), z3.substitute(s.offset, *writer) == o) for s in stores]
        aligned = z3.Extract(shift - 1, 0, o) == 0 if shift else z3.BoolVal(True)
        lines = sorted(read.lines)
        happens = Obligation(f"equivalence: the shared reads of {read.buffer} at lines {lines} see a store of the "
                             f"same loop iteration (line {stores[0].line})", "equivalence",
                             z3.And(reader, z3.Not(z3.And(aligned, in_block, z3.Or(wrote)))))
        if not self._proved(happens):
            return None
        for s in stores:
            pairs = rename_apart([s.guard, s.offset], self.thread, OTHER, self.shared | {str(k)})
            guard, offset = (z3.substitute(t, *pairs) for t in (s.guard, s.offset))
            other = z3.Or([t != w for (_, w), t in zip(writer, OTHER.tid, strict=True)])
            unique = Obligation(f"equivalence: no thread but the hinted one stores {read.buffer} at line {s.line} "
                                f"where the reads at lines {lines} read, in their iteration", "equivalence",
                                z3.And(reader, OTHER.in_launch(self.launch), OTHER.same_block(self.thread), guard,
                                       _overlaps(offset, o, read.elem_bytes), other))
            if not self._proved(unique):
                return None
        self.accepted[key] = hint
        common = [c for c in _conjuncts(stores[0].guard) if all(any(z3.eq(c, d) for d in _conjuncts(s.guard))
                                                                 for s in stores)]
        chain = z3.substitute(stores[-1].values[0], *writer)
        for s in reversed(stores[:-1]):
            condition = z3.And(z3.substitute(_strip(s.guard, common), *writer), z3.substitute(s.offset, *writer) == o)
            chain = z3.If(condition, z3.substitute(s.values[0], *writer), chain)
        chain = z3.simplify(chain)
        return z3.substitute(chain, (k, z3.Var(0, BV64)), (o, z3.Var(1, BV64)))

    def _proved(self, ob: Obligation) -> bool:
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED


def resolve(ctx: KernelContext, thread: Thread, launch: Launch, shared: set[str], propose, checker: Checker,
            timeout_s: float, record, accepted: dict) -> None:
    """Define (or make opaque) every shared-read placeholder of loops with barriers, in every access."""
    LoopShared(ctx, launch, shared, propose, checker, timeout_s, record, accepted).run()
