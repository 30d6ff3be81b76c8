"""What a thread reads back from a global buffer it wrote itself: the value of its own last store there.

Two-pass kernels (llm.c's softmax, Liger's in-place normalisations) store exp(x − max) to the output in one
loop and read it back in a later one to sum it and to divide it in place. Symbolic execution gives each such
read the placeholder `readback(ids, k)` (`semantics.ptx.memory._read_back`, `ReadBack`): ids are the reading
thread's block and thread coordinates, k the iteration of the loop the read lies in (none outside loops).
Here, with every store known, the placeholder is defined as

    readback(ids, k) = v_S(w(k))

the value this same thread stored at store site S (a lane of one store record) at S's iteration w(k), where
w is a guess (below) and three obligations prove, for every thread of the launch whose read record R's
guard holds at iteration k, reading element i_R(k):

* happens: S runs at iteration w (its guard at w, exact: every loop involved has a proved exact exit E, so
  the guard's reach condition with w ≤ E means iteration w runs), stores element i_R, and runs before R in
  the thread's program order (`before`);
* nothing of its own in between: no store or atomic record T of the buffer by this thread, at any iteration
  k' (its guard over-approximates when it runs, which only strengthens the obligation), writes bytes of
  i_R strictly between S at w and R at k in program order; S itself at w is the one write excepted;
* nothing of others in between: no other thread of the block writes bytes of i_R in a barrier interval
  strictly between S's and R's. In S's interval such a write would race with S (write-write), in R's with
  R, and across blocks any conflicting pair races: the race check, which `verified` also requires, rules
  those out, and a refutation is replayed by the concrete interpreter in any case.

Program order of one thread (`before`) is lexicographic: PTX branches only forward except a loop's back edge,
so a loop occupies the lines header..latch and is entered at most once per iteration of what encloses it.
Two access instances are ordered by the iterations of the loops they both lie in (the same `LoopInfo`), then
by the line of the first loop or instruction where they part. This needs every record's `loops` to be the
loops it lies in, which holds where each loop's exit is proved (a path leaving a loop at its proved exit no
longer lists it); a loop without one makes the read opaque. Barrier intervals must be numbers (no loop with
barriers before the read).

The guess w: for a read in a loop at iteration k and S in a loop, w = k + d/b where S's element index
advances by b per iteration and i_R(k) − i_S(k) is the constant d (a loop writing and a loop reading a
row with the same stride, unrolled alike); for S outside loops, S's element index must be i_R itself. Each
record of one placeholder must give the same definition. A placeholder that is not defined becomes an
opaque function of its arguments, marked by an opaque constant: properties depending on it are unknown.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.properties.common import rename_apart
from semantics.properties.equivalence import element_index
from semantics.properties.races import OTHER
from semantics.ptx.machine import Launch, Thread, simplify
from semantics.ptx.state import Access, KernelContext, ReadBack


def before(a_loops: tuple, a_line: int, b_loops: tuple, b_line: int) -> z3.BoolRef:
    """One thread runs the instance of a (in `a_loops` at their iterations) before that of b, strictly."""
    n = 0
    while n < min(len(a_loops), len(b_loops)) and a_loops[n][0] is b_loops[n][0]:
        n += 1
    a_next = a_loops[n][0].line if n < len(a_loops) else a_line
    b_next = b_loops[n][0].line if n < len(b_loops) else b_line
    result = z3.BoolVal(a_next < b_next)
    for (_, ka), (_, kb) in reversed(list(zip(a_loops[:n], b_loops[:n], strict=True))):
        result = z3.Or(z3.ULT(ka, kb), z3.And(ka == kb, result))
    return result


def _covers(offset: z3.BitVecRef, width: int, element: z3.BitVecRef, elem_bytes: int) -> z3.BoolRef:
    """Bytes [offset, offset + width) meet the element's."""
    start = element * elem_bytes
    return z3.And(z3.ULT(offset, start + elem_bytes), z3.ULT(start, offset + width))


def _at(access: Access, pairs: list) -> tuple[tuple, z3.BoolRef, z3.BitVecRef]:
    """(loops, guard, offset) of the access with `pairs` substituted (an iteration renamed or fixed)."""
    if not pairs:
        return access.loops, access.guard, access.offset
    loops = tuple((loop, z3.substitute(k, *pairs)) for loop, k in access.loops)
    return loops, z3.substitute(access.guard, *pairs), z3.substitute(access.offset, *pairs)


def writer_iteration(at: z3.BitVecRef, loops: tuple, s: Access, lane: int) -> tuple[bool, z3.BitVecRef | None]:
    """A guess (checked by obligations) of the iteration at which store s's lane writes byte offset `at`, an
    offset reached in `loops` (at most one loop, at its iteration k): (True, None) for s outside loops at
    exactly that offset; (True, k + d/b) for s in a loop whose offset advances by b bytes an iteration and
    lies d bytes before `at` at iteration k (a loop writing and a loop reading a row alike, unrolled alike);
    (False, None) otherwise."""
    at_s = s.offset + lane * s.elem_bytes
    if not s.loops:
        return z3.eq(simplify(at - at_s), z3.BitVecVal(0, 64)), None
    if len(s.loops) != 1 or len(loops) != 1:
        return False, None
    (_, k_s), (_, k) = s.loops[0], loops[0]
    one, zero = z3.BitVecVal(1, 64), z3.BitVecVal(0, 64)
    step = simplify(z3.substitute(at_s, (k_s, one)) - z3.substitute(at_s, (k_s, zero)))
    gap = simplify(at - z3.substitute(at_s, (k_s, k)))
    if not (z3.is_bv_value(step) and z3.is_bv_value(gap)) or step.as_signed_long() == 0:
        return False, None
    d, b = gap.as_signed_long(), step.as_signed_long()
    return (True, simplify(k + d // b)) if d % b == 0 else (False, None)


def runs_at(s: Access, fix: list) -> tuple[tuple, z3.BoolRef]:
    """(loops, condition) of store s at the iterations `fix` sets: the condition says exactly that this thread
    runs it there, given each loop's proved exact exit E (its guard's reach condition with k ≤ E: every
    earlier iteration took the back edge, `termination.exact_exit`)."""
    loops, guard, _ = _at(s, fix)
    return loops, z3.And(guard, *[z3.ULE(k, loop.exit) for loop, k in loops])


def exits_proved(accesses: list[Access]) -> bool:
    """Every loop the accesses lie in has a proved exact exit, and their barrier counts are numbers: then their
    `loops` are exactly the loops around them and `before` orders them."""
    return all(a.phase_term is None and all(loop.exit is not None for loop, _ in a.loops) for a in accesses)


class ReadBacks:
    def __init__(self, ctx: KernelContext, launch: Launch, shared: set[str], checker: Checker, timeout_s: float,
                 record):
        self.ctx, self.thread, self.launch, self.shared = ctx, ctx.thread, launch, shared
        self.checker, self.timeout_s, self.record = checker, timeout_s, record

    def run(self) -> None:
        """Define every placeholder (in the order their loads ran: a store's value may read an earlier one) and
        substitute the definition into every access at once."""
        order = {id(a): n for n, a in enumerate(self.ctx.accesses)}
        reads = sorted(self.ctx.readbacks.values(),
                       key=lambda r: min((order.get(id(a), 0) for a in r.records), default=0))
        for read in reads:
            body, why = self._define(read)
            if body is None:
                body = self._opaque(read, why)
            for access in self.ctx.accesses:
                access.guard = z3.substitute_funs(access.guard, (read.func, body))
                access.offset = z3.substitute_funs(access.offset, (read.func, body))
                access.values = tuple(z3.substitute_funs(v, (read.func, body)) for v in access.values)

    def _opaque(self, read: ReadBack, why: str) -> z3.ExprRef:
        name = read.func.name()
        opaque = z3.Const(f"opaque!{name}", z3.BoolSort())
        self.ctx.opaque[str(opaque)] = f"the read of {read.buffer} at line {read.line} (an output read back): {why}"
        sorts = [read.func.domain(i) for i in range(read.func.arity())]
        unknown = z3.Function(f"unmodelled!{name}", *sorts, z3.BoolSort(), read.func.range())
        return unknown(*[z3.Var(i, s) for i, s in enumerate(sorts)], opaque)

    # ------------------------------------------------------------ the definition

    def _define(self, read: ReadBack) -> tuple[z3.ExprRef | None, str]:
        """The placeholder's body over Var(0..) (its arguments), or None and why not."""
        if not read.records:
            return None, "no load of it runs in the real pass"
        stores = [a for a in self.ctx.accesses if a.space == "global" and a.buffer == read.buffer and a.kind != "load"]
        if not exits_proved([*read.records, *stores]):
            return None, "a loop around it or around a store to the buffer has barriers or no proved exact exit"
        bodies = []
        for load in read.records:
            whys = [(-1, "no store of this thread writes it earlier at a matching iteration")]
            for s, lane, w in self._candidates(read, load, stores):
                body, why = self._from(read, load, s, lane, w, stores)
                if body is not None:
                    bodies.append(body)
                    break
                whys.append(why)
            else:
                return None, max(whys)[1]   # the candidate that came furthest says most
        if any(not z3.eq(b, bodies[0]) for b in bodies[1:]):
            return None, "its loads on different paths read different writers"
        return bodies[0], ""

    def _candidates(self, read: ReadBack, load: Access, stores: list[Access]):
        """(store record, lane, writer iteration or None) guesses for the load's lane (`writer_iteration`)."""
        at = load.offset + read.lane * load.elem_bytes
        for s in stores:
            if s.kind != "store" or s.elem_bytes != load.elem_bytes:
                continue
            for lane in range(len(s.values)):
                found, w = writer_iteration(at, load.loops, s, lane)
                if found:
                    yield s, lane, w

    def _from(self, read: ReadBack, load: Access, s: Access, lane: int, w: z3.BitVecRef | None,
              stores: list[Access]) -> tuple[z3.ExprRef | None, tuple[int, str]]:
        """The placeholder's body if store s (lane, at iteration w) is proved the load's last writer, else None
        and (how many premises were proved, the one that was not)."""
        fix = [(s.loops[0][1], w)] if w is not None else []
        s_loops, happens_at = runs_at(s, fix)
        i_r = element_index(load, read.lane)
        i_s = simplify(z3.substitute(element_index(s, lane), *fix)) if fix else element_index(s, lane)
        reader = z3.And(self.thread.in_launch(self.launch), load.guard)
        order = before(s_loops, s.line, load.loops, load.line)
        happens = Obligation(f"equivalence: the read of {read.buffer} at line {load.line} reads back the store at "
                             f"line {s.line} of the same thread", "equivalence",
                             z3.And(reader, z3.Not(z3.And(happens_at, i_s == i_r, order))))
        if not self._proved(happens):
            return None, (0, f"the store at line {s.line} was not proved to write it earlier")
        for t in stores:
            if not self._none_between(read, load, reader, i_r, s, s_loops, t):
                return None, (1, f"the store at line {t.line} of the same thread may overwrite it in between")
        for t in stores:
            if not self._no_other_writer(read, load, reader, i_r, s, t):
                return None, (2, f"another thread's store at line {t.line} may overwrite it between barriers")
        value = z3.substitute(s.values[lane], *fix) if fix else s.values[lane]
        args = [*self.thread.variables(), *[k for _, k in load.loops]]
        # the body over Var(n) for argument n, shifted under the value's own binders (a Sum's lambda): z3 numbers
        # a lambda's variables from the last, so the lambda over the arguments reversed has Var(n) = args[n]
        return z3.Lambda(list(reversed(args)), simplify(value)).body(), (3, "")

    def _none_between(self, read: ReadBack, load: Access, reader: z3.BoolRef, i_r: z3.BitVecRef, s: Access,
                      s_loops: tuple, t: Access) -> bool:
        """No instance of t by this thread writes the element between s (at its writer iteration) and the load."""
        fresh = [(k, z3.BitVec(f"{k}.between", 64)) for _, k in t.loops]
        t_loops, t_guard, _ = _at(t, fresh)
        order = z3.And(before(s_loops, s.line, t_loops, t.line), before(t_loops, t.line, load.loops, load.line))
        if t is s:   # the writer itself, at another iteration
            order = z3.And(order, z3.Or([k != ks for (_, k), (_, ks) in zip(t_loops, s_loops, strict=True)]))
        order = simplify(order)
        if z3.is_false(order):
            return True
        t_offset = z3.substitute(t.offset, *fresh) if fresh else t.offset
        written = _covers(t_offset, t.width, i_r, load.elem_bytes)
        ob = Obligation(f"equivalence: no store at line {t.line} of the same thread overwrites what the read of "
                        f"{read.buffer} at line {load.line} reads back", "equivalence",
                        z3.And(reader, t_guard, written, order))
        return self._proved(ob)

    def _no_other_writer(self, read: ReadBack, load: Access, reader: z3.BoolRef, i_r: z3.BitVecRef, s: Access,
                         t: Access) -> bool:
        """No other thread of the block writes the element at t in a barrier interval strictly between s's and the
        load's (the race check covers the intervals of both and other blocks)."""
        if s.phase < t.phase < load.phase:
            pairs = rename_apart([t.guard, t.offset], self.thread, OTHER, self.shared)
            guard, offset = z3.substitute(t.guard, *pairs), z3.substitute(t.offset, *pairs)
            other = z3.Or([a != b for a, b in zip(OTHER.tid, self.thread.tid, strict=True)])
            ob = Obligation(f"equivalence: no other thread's store at line {t.line} overwrites what the read of "
                            f"{read.buffer} at line {load.line} reads back", "equivalence",
                            z3.And(reader, OTHER.in_launch(self.launch), OTHER.same_block(self.thread), other, guard,
                                   _covers(offset, t.width, i_r, load.elem_bytes)))
            return self._proved(ob)
        return True

    def _proved(self, ob: Obligation) -> bool:
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED


def resolve(ctx: KernelContext, thread: Thread, launch: Launch, shared: set[str], checker: Checker,
            timeout_s: float, record) -> None:
    """Define (or make opaque) every read-back placeholder (`ReadBack`), in every access."""
    del thread  # the context's own thread (the placeholders speak of it)
    ReadBacks(ctx, launch, shared, checker, timeout_s, record).run()
