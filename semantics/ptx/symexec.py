"""Symbolic execution of one symbolic thread: from PTX to the set of accesses it may perform.

Paths fork at conditional branches and are pruned when infeasible. Loops are not unrolled: a loop whose
carried registers all advance by a loop-invariant step each iteration (induction variables, the shape of
guarded grid-stride and strided loops) is executed once with a symbolic iteration number `k`, every
induction register set to `entry + k·step`. Bit-vector multiplication wraps exactly as repeated addition
does, so this is the exact state at iteration k. A carried float that accumulates (sum, product, max, min)
becomes a comprehension (`accumulators`); any other carried value is opaque or, for integers, `Unsupported`.
A loop inside a loop body is summarised the same way from its entry state and continued only from its
proved exact exit iteration (`_nested`), for every iteration of the loops around it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from semantics.errors import Unsupported
from semantics.ptx import arg_accumulators, loop_phases, online_sums, unroll
from semantics.ptx.accumulators import Accumulator, at_iteration, classify, replay_max
from semantics.ptx.ast import Instr, Kernel, Label, Reg, Sym, Vec
from semantics.ptx.async_copy import ASYNC, require_done
from semantics.ptx.idioms import IDIOM_HANDLERS, rewrite_idioms
from semantics.ptx.instructions import ALU
from semantics.ptx.machine import Pointer, simplify
from semantics.ptx.memory import MEMORY
from semantics.ptx.merge import Worklist
from semantics.ptx.state import KernelContext, ThreadState, fresh_like
from semantics.ptx.sync import SYNC
from semantics.ptx.types import PtxType
from semantics.purify import by_constant, purified
from semantics.terms import constants, mentions

MAX_PATHS = 2048
PRED = PtxType(".pred", "pred", 1)
NO_EFFECT = frozenset({"pragma", ".pragma"})
BARRIERS = frozenset({"bar", "barrier"})


@dataclass
class LoopInfo:
    """A loop as summarised: its position, the condition to stay in it at iteration k, and its entries."""

    header: str
    line: int
    k: z3.BitVecRef                       # the iteration variable of the real pass
    stay: list[z3.BoolRef] = field(default_factory=list)   # back-edge path conditions, in terms of k
    entry: z3.BoolRef = z3.BoolVal(True)  # when the loop is entered
    steps: dict[str, object] = field(default_factory=dict)  # induction register -> step
    start: dict[str, object] = field(default_factory=dict)  # induction register -> value at entry
    placeholder: z3.BoolRef = z3.BoolVal(True)  # stands for "iteration k is reached" until resolved
    exit: z3.BitVecRef | None = None  # the proved iteration at which every entering thread leaves
    barriers: tuple[int, ...] = ()    # the barrier lines every iteration passes, in order (usually none)

    def reach_guard(self, bound: z3.BitVecRef | None) -> z3.BoolRef:
        """A sound over-approximation of "iteration k runs": the previous iteration took the back edge,
        and k is within a proved iteration bound (the loop is left at or before it)."""
        previous = z3.Or(self.k == 0, self.stay_at(self.k - 1))
        return z3.And(previous, z3.ULE(self.k, bound)) if bound is not None else previous

    def stay_at(self, j: z3.BitVecRef) -> z3.BoolRef:
        """The condition to take the back edge at iteration j."""
        return z3.substitute(z3.Or(self.stay) if self.stay else z3.BoolVal(False), (self.k, j))

    def reached(self, k: z3.BitVecRef) -> z3.BoolRef:
        """Iteration k runs: every earlier iteration took the back edge."""
        j = z3.BitVec(f"j.{self.header}", 64)
        return z3.ForAll([j], z3.Implies(z3.ULT(j, k), self.stay_at(j)))


@dataclass
class Effects:
    """Everything one symbolic thread may do, for the property checkers.

    Until `resolve_loops` runs, guards inside and after a loop carry the loop's placeholder for "this
    iteration is reached"; it is resolved once iteration bounds are known (proved by termination)."""

    ctx: KernelContext
    loops: list[LoopInfo]
    exits: list[z3.BoolRef]

    def resolve_loops(self, bounds: dict[int, z3.BitVecRef | None]) -> None:
        """Replace every loop placeholder by its reach guard; `bounds` maps id(loop) to a proved bound."""
        if not self.loops:
            return
        pairs = [(loop.placeholder, loop.reach_guard(bounds.get(id(loop)))) for loop in self.loops]
        for access in self.ctx.accesses:
            access.guard = z3.substitute(access.guard, *pairs)
        for loop in self.loops:
            loop.entry = z3.substitute(loop.entry, *pairs)
            loop.stay = [z3.substitute(c, *pairs) for c in loop.stay]
        self.exits = [z3.substitute(c, *pairs) for c in self.exits]


class Executor:
    def __init__(self, kernel: Kernel, ctx: KernelContext, exit_oracle=None):
        """`exit_oracle(loop, key)` returns a proved exact exit iteration of a summarised loop, or None."""
        self.kernel = kernel
        self.ctx = ctx
        self.exit_oracle = exit_oracle
        self.body = kernel.body
        self.labels = {item.name: i for i, item in enumerate(self.body) if isinstance(item, Label)}
        self.loops: list[LoopInfo] = []
        self.generic_loops: list[LoopInfo] = []   # loops summarised inside a generic run (nothing recorded)
        self.exits: list[z3.BoolRef] = []
        self.paths = 0
        self.solver = z3.Solver()
        self.solver.set("timeout", 2000)

    # ------------------------------------------------------------ driver

    def run(self) -> Effects:
        state = ThreadState(self.ctx)
        self._explore(state, 0, stop=None, on_back_edge=None)
        return Effects(self.ctx, self.loops, self.exits)

    def _explore(self, state: ThreadState, pc: int, stop: tuple | None, on_back_edge) -> list:
        """Run paths from pc. Inside a loop body (`stop` = (header, latch)), a taken back edge calls
        `on_back_edge(state)`; a path leaving the body is returned as (pc, state) for the caller."""
        return self.explore_from([(pc, state)], stop, on_back_edge)

    def explore_from(self, starts: list, stop: tuple | None, on_back_edge) -> list:
        """`_explore` from several (pc, state) pairs at once: states meeting at one instruction are joined."""
        work = Worklist()
        work.extend(starts)
        leaving = []
        while work:
            pc, st = work.pop()
            if stop and not (stop[0] <= pc <= stop[1]):
                leaving.append((pc, st))
            elif pc >= len(self.body):
                self._finish(st)
            elif isinstance(self.body[pc], Label):
                latch = self._latch(pc)
                if latch is None:
                    work.append((pc + 1, st))
                elif stop:
                    work.extend(self._nested(st, pc, latch, stop))
                else:
                    work.extend(self._loop(st, pc, latch))
            else:
                work.extend(self._step(st, self.body[pc], pc, stop, on_back_edge))
        return leaving

    def _finish(self, st: ThreadState) -> None:
        require_done(st, "the thread's exit", f"line {st.line}")
        self.exits.append(st.condition())
        if st.recording:
            self.ctx.barrier_paths.append((st.condition(), st.barriers))

    # ------------------------------------------------------------ one instruction

    def _step(self, st: ThreadState, ins: Instr, pc: int, stop, on_back_edge):
        """Execute `ins`; return its successors as (pc, state) pairs: none when the path ends, two at a
        fork."""
        if ins.opcode in NO_EFFECT:
            return [(pc + 1, st)]
        where = f"line {ins.line}"
        if ins.opcode == "bra":
            return self._branch(st, ins, pc, stop, on_back_edge)
        if ins.opcode in ("ret", "exit"):
            if ins.pred is not None:
                cond = self._pred(st, ins)
                done, cont = st.copy(), st
                done.path.append(cond)
                cont.path.append(z3.Not(cond))
                self._finish(done)
                return [(pc + 1, cont)]
            self._finish(st)
            return []
        handler = (ALU.get(ins.opcode) or MEMORY.get(ins.opcode) or SYNC.get(ins.opcode)
                   or ASYNC.get(ins.opcode) or IDIOM_HANDLERS.get(ins.opcode))
        if handler is None:
            raise Unsupported(f"instruction `{ins.opcode}{''.join(ins.mods)}`", where)
        st.guard_pred = self._pred(st, ins) if ins.pred is not None else None
        st.line = ins.line
        try:
            handler(st, ins)
        except Unsupported as exc:
            raise Unsupported(exc.feature, exc.where or where) from None
        except (ValueError, TypeError, z3.Z3Exception) as exc:
            raise Unsupported(f"`{ins.opcode}{''.join(ins.mods)}` with these operands ({exc})", where) from None
        finally:
            st.guard_pred = None
        return [(pc + 1, st)]

    def _pred(self, st: ThreadState, ins: Instr) -> z3.BoolRef:
        name, negated = ins.pred
        value = st.read(Reg(name), PRED)
        return z3.Not(value) if negated else value

    def _branch(self, st: ThreadState, ins: Instr, pc: int, stop, on_back_edge):
        (target,) = ins.operands
        if not isinstance(target, Sym) or target.name not in self.labels:
            raise Unsupported(f"branch to `{target}`", f"line {ins.line}")
        dest = self.labels[target.name]
        cond = self._pred(st, ins) if ins.pred is not None else z3.BoolVal(True)
        taken = []
        for c, to in ((cond, dest), (z3.Not(cond), pc + 1)):
            s = st.copy()
            c = simplify(c)
            if z3.is_false(c):
                continue
            if not z3.is_true(c):
                s.path.append(c)
                if not self._feasible(s):
                    continue
            taken.append((to, s))
        if not stop and len(taken) == 1 and len(taken[0][1].path) > len(st.path) and by_constant(taken[0][1].path[-1]):
            # outside loops, with the other side dead: in the launch the path implies this condition. One with a
            # division (a window's tap test) would only be carried into every later access's guard, a division
            # query each for coverage and every goal; a linear one (`r < rows` where the grid is exact) is a free
            # lemma there (without it a row scan's lanes query ran out of 120 s). In a loop body the path's tail
            # is the loop's stay condition: kept whole.
            taken[0][1].path.pop()
        successors = []
        for to, s in taken:
            if to <= pc:  # a backward branch: must be the back edge of the loop being executed
                if not (stop and to == stop[0]):
                    raise Unsupported("a backward branch that is not the back edge of a simple loop",
                                      f"line {ins.line}")
                on_back_edge(s)
                continue
            successors.append((to, s))
        self.paths += max(len(successors) - 1, 0)
        if self.paths > MAX_PATHS:
            raise Unsupported(f"more than {MAX_PATHS} paths per thread")
        return successors

    def _feasible(self, st: ThreadState) -> bool:
        return feasible(z3.And(self.ctx.thread.in_launch(self.ctx.launch), *st.path), self.solver)

    # ------------------------------------------------------------ loops

    def _latch(self, pc: int) -> int | None:
        """The last backward branch to the label at pc, if it heads a loop."""
        name = self.body[pc].name
        latches = [i for i in range(pc, len(self.body)) if isinstance(self.body[i], Instr)
                   and self.body[i].opcode == "bra" and self.body[i].operands
                   and isinstance(self.body[i].operands[0], Sym) and self.body[i].operands[0].name == name]
        return max(latches) if latches else None

    def _nested(self, st: ThreadState, header: int, latch: int, outer: tuple[int, int]) -> list:
        """A loop met in the body of the loop `outer` = (header, latch), summarised as a top-level loop is, from
        its entry state (which speaks of the outer loop's iteration, or of the outer generic run's header
        symbols). It must be left at a proved exact exit iteration (`_loop`), so the state after it carries no
        trace of its own iteration: the outer back edge, accumulators and reach guards then see plain terms,
        an outer accumulator whose step is the inner loop's Sum a Sum of Sums. Barriers anywhere in the nest are
        refused: loop phases (`loop_phases`) and shared reads per iteration (`loop_shared`) count one loop."""
        where = f"loop at line {self.body[header].line}"
        if latch > outer[1]:
            raise Unsupported("a loop whose back edge lies after its enclosing loop's", where)
        barriers = self._barrier_lines(*outer)
        if barriers:
            raise Unsupported("a barrier in a loop nest (barriers in nested loops are not modelled)",
                              f"line {barriers[0]}")
        return self._loop(st, header, latch, nested=True)

    def _loop(self, st: ThreadState, header: int, latch: int, nested: bool = False) -> list:
        """Summarise the loop [header, latch] entered in state st; return the states that leave it. A loop met
        while an enclosing loop is only being summarised (`st.recording` false) records nothing: its LoopInfo
        is kept apart (`generic_loops`) and needs no termination check of its own beyond its exact exit."""
        where = f"loop at line {self.body[header].line}"
        self._check_single_entry(header, latch, where)
        written = self._written_registers(header, latch)
        try:
            steps, accumulators, induction_syms, per_iteration, iteration = self._induction_steps(
                st, header, latch, written, where)
        except unroll.NotInduction as exc:
            if unroll.constant_start(st, exc.registers):   # a tree loop halving a constant: run it out
                return unroll.run(self, st, header, latch, where)
            raise
        # numbered per execution, so obligation texts (cache keys, certificates) do not depend on what the
        # process ran before
        summarised = self.loops if st.recording else self.generic_loops
        prefix = "k" if st.recording else "g"
        k = z3.BitVec(f"{prefix}{len(summarised)}.{self.body[header].name}", 64)
        info = LoopInfo(self.body[header].name, self.body[header].line, k, entry=st.condition(), steps=steps,
                        start={r: st.regs.get(r) for r in steps}, placeholder=z3.Bool(f"reach.{k}"),
                        barriers=per_iteration)
        summarised.append(info)
        body_state = st.copy()
        body_state.loops = st.loops + ((info, k),)
        body_state.entered_loop = True
        body_state.in_body = True
        body_state.generic = (k, len(st.barriers), iteration, not self._barrier_lines(header, latch))
        if per_iteration:
            body_state.phase_extra = loop_phases.completed(st.phase_extra, k, len(per_iteration))
        at_k = [(induction_syms[r], _symbol_of(_advance(st.regs[r], steps[r], k))) for r in steps]
        at_k.append((iteration, k))  # shared reads of the generic run, R(iteration, offset), at iteration k
        for read in self.ctx.loop_reads.values():
            if z3.eq(read.iteration, iteration):
                read.loop, read.base = info, len(st.barriers)
        summaries, arg_summaries = {}, {}
        maxes_at_k = online_sums.maxes_at(st, accumulators, at_k, k, info.header)
        for r in sorted(written):   # in one order in every process: fresh names are numbered as they are made
            if r in steps:
                body_state.regs[r] = _advance(st.regs[r], steps[r], k)
            elif isinstance(accumulators.get(r), Accumulator):
                acc = accumulators[r]
                if not all(any(z3.eq(d, h) for h, _ in maxes_at_k) for d in acc.depends):
                    body_state.regs[r] = body_state.opaque(st.regs[r], f"the value carried in {r} by the {where} "
                                                           "(a sum reading a running max from -inf)")
                    continue
                step_k = z3.substitute(acc.step, *at_k, *maxes_at_k) if at_k or maxes_at_k else acc.step
                j = z3.BitVec(f"j.{info.header}.{r}", 64)
                summaries[r] = (acc, step_k, j)
                body_state.regs[r] = at_iteration(acc, st.regs[r], k, step_k, k, j)
            elif isinstance(accumulators.get(r), online_sums.OnlineSum):
                continue   # after the max accumulator it is rebased on (`_online`)
            elif isinstance(accumulators.get(r), arg_accumulators.ArgAccumulator):
                arg_summaries[r] = arg_accumulators.summary(accumulators[r], info.header, at_k)
                body_state.regs[r] = arg_accumulators.fold_at(arg_summaries[r], st, r, k, k, where)
            elif r in accumulators:
                body_state.regs[r] = body_state.opaque(st.regs[r], accumulators[r])
            elif r in st.regs:
                body_state.regs[r] = fresh_like(st.regs[r], r, self.ctx.fresh())  # dead at the header (checked above)
            else:
                body_state.regs.pop(r, None)
        online = online_sums.start(body_state, st, accumulators, summaries, at_k, k, info.header, where)
        for r in written & st.undefined.keys():   # an iteration may read the previous one's value or none
            body_state.undefined[r] = None
        body_state.path.append(info.placeholder)
        base = len(body_state.path)
        back_states: list[ThreadState] = []

        def back_edge(s: ThreadState) -> None:
            info.stay.append(z3.And(s.path[base:]) if len(s.path) > base else z3.BoolVal(True))
            back_states.append(s)

        leaving = self._explore(body_state, header + 1, (header, latch), back_edge)
        if any(b.copies != st.copies for b in back_states):
            raise Unsupported("a loop whose iterations leave different cp.async copies in flight", where)
        online_sums.check_first_steps(online, back_states, st, summaries, k, where, self.ctx.equations)
        online_sums.check_dependent_first_steps(summaries, back_states, st, k, where, self._same)
        if per_iteration and len({s.barriers for _, s in leaving}) > 1:
            # the exit paths would be compared by barrier uniformity without knowing they leave at one iteration
            raise Unsupported("a loop with barriers that is left on paths passing different barriers", where)
        for _, s in leaving:
            s.in_body = st.in_body   # still in the enclosing loop's body, if any
            s.generic = st.generic
            for r in written & s.undefined.keys():   # defined in some iteration, not only in the last one
                s.undefined[r] = None
            arg_accumulators.finish(s, st, summaries, arg_summaries, at_k, k, where, self._same)
            self._finish_accumulators(s, st, summaries, at_k + maxes_at_k, k, back_states, where)
            online_sums.finish(s, st, online, summaries, at_k, k, back_states, where, self._same)
            if per_iteration:
                s.own_stores = ()  # other threads may have overwritten them in the loop's barrier intervals
        if self.exit_oracle is not None:
            same = [other for other in summarised if other.header == info.header]
            tag = "" if st.recording else "generic"
            bound = self.exit_oracle(info, f"termination:{info.header}#{tag}{same.index(info)}")
            if bound is not None:
                return [(pc, _at_iteration(s, info, bound, st.loops)) for pc, s in leaving]
        if nested:
            raise Unsupported("a nested loop whose exact exit iteration is not proved (an inner loop is summarised "
                              "only at a proved exit, for every iteration of the loops around it)", where)
        if per_iteration:
            return leaving  # the state after the loop depends on the exit iteration through the barrier count
        return self._merge_exits(st, leaving, written, k, where)

    def _merge_exits(self, entry: ThreadState, leaving: list, written: set[str], k, where: str) -> list:
        """Collapse the loop's exits into one state when nothing live after it depends on the exit iteration.

        Once termination is proved (a separate obligation; an unproved loop makes the verdict unknown
        anyway), every thread that enters the loop leaves it, so with one exit target the state after it is
        the entry state plus the registers the loop wrote: k-free and equal on every exit they stay exact;
        differing float values become opaque. Everything after the loop then no longer carries k, which
        keeps later obligations quantifier-free and the paths few."""
        targets = {pc for pc, _ in leaving}
        if len(targets) != 1 or len(leaving) < 1:
            return leaving
        (pc,) = targets
        merged = entry.copy()
        merged.entered_loop = True
        merged.own_stores = leaving[0][1].own_stores
        for r in sorted(written):
            if not self._live_from(r, pc):
                merged.regs.pop(r, None)
                continue
            values = [s.regs.get(r) for _, s in leaving]
            first = values[0]
            if first is None or any(v is None or isinstance(v, Pointer) for v in values):
                return leaving
            if any(r in s.undefined for _, s in leaving):
                merged.undefined[r] = None
            else:
                merged.undefined.pop(r, None)
            if all(z3.eq(v, first) for v in values) and not mentions(first, k):
                merged.regs[r] = first
            elif z3.is_real(first):
                merged.regs[r] = merged.opaque(first, f"the value left in {r} by the {where}")
            else:
                return leaving
        if any(s.barriers != entry.barriers or s.own_stores != merged.own_stores for _, s in leaving):
            return leaving
        return [(pc, merged)]

    def _live_from(self, reg: str, pc: int) -> bool:
        """Some path from pc reads `reg` before writing it (a predicated write does not kill it)."""
        todo, seen = [pc], set()
        while todo:
            i = todo.pop()
            if i in seen or i >= len(self.body):
                continue
            seen.add(i)
            item = self.body[i]
            if isinstance(item, Label):
                todo.append(i + 1)
                continue
            if reg in _sources(item):
                return True
            if reg in _dests(item) and item.pred is None:
                continue
            if item.opcode in ("ret", "exit") and item.pred is None:
                continue
            if item.opcode == "bra":
                todo.append(self.labels.get(item.operands[0].name, len(self.body)))
                if item.pred is None:
                    continue
            todo.append(i + 1)
        return False

    def _finish_accumulators(self, s: ThreadState, entry: ThreadState, summaries: dict, at_k: list, k,
                             back_states: list, where: str) -> None:
        """On a path leaving the loop at iteration k, an accumulator holds its value at the start of the
        iteration, or (a do-while exit) that value combined with one more step: the comprehension over k+1
        iterations. That is so where the solver proves the value one more step, or where it is the very term a
        back edge of the same iteration holds (the machine's value after one more body, which the summary at
        k+1 describes). Any other value is opaque."""
        for r, (acc, step_k, j) in summaries.items():
            start = at_iteration(acc, entry.regs[r], k, step_k, k, j)
            if acc.kind == "max" and s.ctx.marks(start):   # a running max from -inf: combined as max.f32 does
                one_more = z3.substitute(replay_max(acc, start, where), *at_k)
            else:
                one_more = z3.substitute(acc.next_value, (acc.header, start), *at_k)
            value = s.regs.get(r)
            if value is None or self._same(value, start):
                continue
            if any(z3.eq(value, b.regs.get(r, start)) for b in back_states) or self._same(value, one_more):
                online_sums.replace_copies(s, value, at_iteration(acc, entry.regs[r], k + 1, step_k, k, j, ran=True))
            else:
                s.regs[r] = s.opaque(value, f"the value left in {r} by the {where}")

    def _same(self, a: z3.ExprRef, b: z3.ExprRef) -> bool:
        """a = b for all values of their symbols: syntactically after simplification, or else proved (the
        simplifier's term order follows symbol numbering, so equal selections may print differently)."""
        if z3.eq(simplify(a), simplify(b)):
            return True
        self.solver.push()
        self.solver.add(a != b)
        proved = self.solver.check() == z3.unsat
        self.solver.pop()
        return proved

    def _check_single_entry(self, header: int, latch: int, where: str) -> None:
        for i, item in enumerate(self.body):
            if isinstance(item, Instr) and item.opcode == "bra" and not (header <= i <= latch):
                target = self.labels.get(item.operands[0].name) if isinstance(item.operands[0], Sym) else None
                if target is not None and header < target <= latch:
                    raise Unsupported("a jump into the middle of a loop", where)

    def _barrier_lines(self, header: int, latch: int) -> list[int]:
        """The lines of the barriers in the body range [header, latch]."""
        return [item.line for item in self.body[header:latch + 1]
                if isinstance(item, Instr) and item.opcode in BARRIERS]

    def _written_registers(self, header: int, latch: int) -> set[str]:
        return {r for item in self.body[header:latch + 1] if isinstance(item, Instr) for r in _dests(item)}

    def _induction_steps(self, st: ThreadState, header: int, latch: int, written: set[str],
                         where: str) -> tuple[dict, dict, dict, tuple[int, ...], z3.BitVecRef]:
        """Run the body once from a generic header state; a register is an induction variable when every
        back edge gives it `header value + step`, the step free of header values. Other live carried
        registers must hold floats (accumulators): their values become opaque, so safety can still be
        proved while value equivalence is reported unknown. Also returns the barrier lines one iteration
        passes (the same on every back edge, `loop_phases.per_iteration`), and the generic run's iteration
        symbol (shared reads after a barrier of the body are functions of it, `memory._loop_read`)."""
        generic = st.copy()
        generic.recording = False
        generic.loops = st.loops + ((None, None),)
        generic.entered_loop = True
        iteration = z3.BitVec(f"iteration!{self.ctx.fresh()}", 64)
        generic.generic = (iteration, len(st.barriers), iteration, not self._barrier_lines(header, latch))
        symbols = {}
        for r in sorted(written):   # in one order in every process (a set's order is not): fresh names numbered
            if r in st.regs:
                generic.regs[r] = symbols[r] = fresh_like(st.regs[r], r, self.ctx.fresh())
            else:
                generic.regs.pop(r, None)
        nexts: list[dict] = []
        passed: list[tuple[int, ...]] = []

        def back_edge(s: ThreadState) -> None:
            nexts.append(s.regs)
            passed.append(s.barriers[len(st.barriers):])
        self._explore(generic, header + 1, (header, latch), back_edge)
        per_iteration = loop_phases.per_iteration(passed, where)
        steps = {}
        header_syms = [_symbol_of(v) for v in symbols.values()]
        for r, sym in symbols.items():
            deltas = [_delta(n.get(r), sym) for n in nexts]
            if deltas and all(d is not None and z3.eq(d, deltas[0]) for d in deltas):
                if not any(z3.is_app(h) and mentions(deltas[0], h) for h in [*header_syms, iteration]):
                    steps[r] = deltas[0]
        carried = sorted(r for r in written if r not in steps and self._live_at_header(r, header, latch))
        not_induction = [r for r in carried if not z3.is_real(symbols.get(r, z3.BoolVal(True)))]
        pairs = arg_accumulators.classify_all(not_induction, symbols, nexts,
                                              [r for r in carried if z3.is_real(symbols.get(r, z3.BoolVal(True)))])
        if any(r not in pairs for r in not_induction):
            raise unroll.NotInduction([r for r in not_induction if r not in pairs], where)
        induction_syms = {str(_symbol_of(symbols[r])) for r in steps}
        accumulators = {}
        for r, (arg, value) in pairs.items():   # an index register and its value register (an argmax)
            others = [h for h in header_syms if str(h) not in induction_syms]
            if any(mentions(t, h) for t in arg.terms() for h in others):
                raise unroll.NotInduction([r], where)
            accumulators[r], accumulators[arg.value_reg] = arg, value
        for r in carried:
            if r in accumulators:
                continue
            found = [classify(symbols[r], n[r]) for n in nexts if r in n]
            acc = found[0] if found and all(f is not None and f.kind == found[0].kind and z3.eq(f.step, found[0].step)
                                            for f in found) else None
            others = [h for h in header_syms if str(h) not in induction_syms]
            if acc is not None and not any(mentions(acc.step, h) for h in others):
                accumulators[r] = acc
            else:  # carried, but not a recognised accumulation: its value becomes opaque, for this reason
                accumulators[r] = self._why_not_summarised(r, [n[r] for n in nexts if r in n], where)
        online_sums.classify_all(accumulators, symbols, nexts,
                                 [h for h in header_syms if str(h) not in induction_syms], where,
                                 self.ctx.equations)
        return steps, accumulators, {r: _symbol_of(symbols[r]) for r in steps}, per_iteration, iteration

    def _why_not_summarised(self, reg: str, nexts: list, where: str) -> str:
        """Why a carried register is opaque: an opaque value it depends on (each iteration's shared reads, say),
        or else its shape."""
        for value in nexts:
            for c in constants(value):
                if str(c) in self.ctx.opaque:
                    return (f"the value carried in {reg} by the {where} is not summarised: it depends on an "
                            f"unmodelled value ({self.ctx.opaque[str(c)]})")
        return f"the value carried in {reg} by the {where} (not a sum, product, max or min accumulation)"

    def _live_at_header(self, reg: str, header: int, latch: int) -> bool:
        """Conservatively: the register is read in the body before any write to it, or read after the loop.
        Not live: a register the header's own block writes before reading it (Triton's copies of its
        accumulators, `mov.b32 %r10, %r459`), since every iteration, and every path out of the loop, runs that
        block first, so the value it held at the header is never read."""
        for item in self.body[header + 1:latch + 1]:
            if isinstance(item, Label) or (isinstance(item, Instr) and item.opcode == "bra"):
                break
            if isinstance(item, Instr) and reg in _sources(item):
                break
            if isinstance(item, Instr) and reg in _dests(item) and item.pred is None:
                return False
        for item in self.body[header:latch + 1]:
            if isinstance(item, Instr):
                if reg in _sources(item):
                    return True
                if reg in _dests(item):
                    break
        for item in self.body[latch + 1:]:
            if isinstance(item, Instr):
                if reg in _sources(item):
                    return True
                if reg in _dests(item) and item.pred is None:
                    return False
        return False


def _dests(ins: Instr) -> set[str]:
    if ins.opcode in ("st", "bra", "ret", "exit") or not ins.operands:
        return set()
    dst = ins.operands[0]
    return {d.name for d in (dst.elems if isinstance(dst, Vec) else [dst]) if isinstance(d, Reg)}


def _sources(ins: Instr) -> set[str]:
    # (a destination that is an address, as cp.async's and red's, is read)
    address_first = not ins.operands or not isinstance(ins.operands[0], Reg | Vec)
    ops = ins.operands if ins.opcode in ("st", "bra") or address_first else ins.operands[1:]
    names = {ins.pred[0]} if ins.pred else set()
    for op in ops:
        for o in (op.elems if isinstance(op, Vec) else [op]):
            if isinstance(o, Reg):
                names.add(o.name)
            elif hasattr(o, "base") and isinstance(o.base, Reg):
                names.add(o.base.name)
    return names


def _symbol_of(value) -> z3.ExprRef:
    return value.offset if isinstance(value, Pointer) else value


def _delta(nxt, hdr):
    """next - header for bit-vectors and pointer offsets; None when not comparable."""
    if nxt is None:
        return None
    if isinstance(hdr, Pointer):
        if not isinstance(nxt, Pointer) or nxt.buffer != hdr.buffer:
            return None
        return simplify(nxt.offset - hdr.offset)
    if z3.is_bv(hdr) and z3.is_bv(nxt) and nxt.size() == hdr.size():
        delta = simplify(nxt - hdr)
        # a round trip through a wider register (cvt.s64.s32 then cvt.u32.u64) folds only with sign
        # extensions eliminated
        return z3.simplify(delta) if mentions(delta, hdr) else delta
    if z3.eq(nxt, hdr):
        return z3.BoolVal(True) if z3.is_bool(hdr) else z3.RealVal(0) if z3.is_real(hdr) else None
    return None


def _at_iteration(state: ThreadState, info: LoopInfo, bound: z3.BitVecRef, outer: tuple) -> ThreadState:
    """A state leaving the loop, at its proved exit iteration: k is replaced by the bound, and "iteration k
    is reached" is true there (every earlier iteration was proved to take the back edge)."""
    pairs = [(info.k, bound), (info.placeholder, z3.BoolVal(True))]
    out = state.copy()
    out.path = [simplify(z3.substitute(c, *pairs)) for c in state.path]
    out.regs = {r: _substitute_value(v, pairs) for r, v in state.regs.items()}
    out.own_stores = tuple((b, z3.substitute(i, *pairs), z3.substitute(v, *pairs), z3.substitute(g, *pairs), ph)
                           for b, i, v, g, ph in state.own_stores)
    if state.phase_extra is not None:
        out.phase_extra = simplify(z3.substitute(state.phase_extra, *pairs))
    out.loops = outer
    return out


def _substitute_value(value, pairs):
    if isinstance(value, Pointer):
        return Pointer(value.space, value.buffer, simplify(z3.substitute(value.offset, *pairs)))
    return simplify(z3.substitute(value, *pairs))


def _advance(start, step, k: z3.BitVecRef):
    """The value of an induction register at iteration k: start + k·step, wrapping at its width."""
    if isinstance(start, Pointer):
        return Pointer(start.space, start.buffer, simplify(start.offset + k * step))
    if z3.is_bv(start):
        w = start.size()
        kk = z3.Extract(w - 1, 0, k) if w < 64 else k
        return simplify(start + kk * step)
    return start  # an unchanged real or predicate: step is "no change"


def feasible(condition: z3.BoolRef, solver: z3.Solver) -> bool:
    """Whether a path condition may hold: False only on unsat, so a path is dropped only when no thread of the
    launch takes it. Asked purified first (divisions by constants named: equisatisfiable, the reading the
    obligations get), which settles a window's tap tests (bit 11 of 11·(q / 186 - 186·(q / 34596)) is clear)
    in milliseconds where the plain query runs out of the solver's timeout and keeps the path; then as it
    stands (some plain queries are the quicker ones), unless purifying left it as it was."""
    named = purified(condition)
    for formula in (named,) if named.eq(condition) else (named, condition):
        solver.push()
        solver.add(formula)
        result = solver.check()
        solver.pop()
        if result != z3.unknown:
            return result == z3.sat
    return True


def execute(kernel: Kernel, ctx: KernelContext, exit_oracle=None) -> Effects:
    """All accesses one symbolic thread of `kernel` may perform, or Unsupported naming what is not modelled."""
    kernel, _ = rewrite_idioms(kernel)  # nvcc libm sequences -> lark.ideal (axioms nvcc.*, semantics/ptx/idioms.py)
    return Executor(kernel, ctx, exit_oracle).run()
