"""The term builder behind library idioms (`semantics.ptx.idioms`): every register at every program point
gets a hash-consed term over pure instructions, so that a sequence is recognised by value, not by text.

A predicated write is `phi(p, new, old)`; at a label where forward paths meet, a register that differs is a
`phi` over the branch conditions that separate the paths (gated SSA), and the paths themselves are reported
(`Incoming`), so that an idiom whose paths meet another branch's can be replaced on its own edges. Anything
else (a loop header, paths of unrelated origin) is an opaque term that matches nothing. Also here: which
registers an instruction reads and surely writes, for the liveness of dead-code elimination.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from semantics.ptx.ast import FloatImm, Instr, IntImm, Label, Reg, Vec
from semantics.ptx.dead_code import Unfollowed, branch_target

PSEUDO = "lark.ideal"


# ---------------------------------------------------------------------------------------------- terms

# Opcodes whose result is a deterministic function of their operands alone (no memory, no other thread,
# no carry flag, no clock): only these build structured terms.
PURE = frozenset({"add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "neg", "abs", "and", "or", "xor",
                  "not", "cnot", "shl", "shr", "setp", "selp", "mov", "cvt", "copysign", "ex2", "lg2", "rcp",
                  "sqrt", "rsqrt", "tanh", "sin", "cos", "popc", "clz", "brev", "bfe", "bfi", "prmt", "testp",
                  "mul24", "mad24", "sad"})
IMPURE_MODIFIERS = frozenset({".cc"})

ENTRY = -1
LAUNCH_CONSTANT = re.compile(r"%(tid|ntid|ctaid|nctaid)\.[xyz]$")


class Terms:
    """Hash-consed terms; a term is an int. Nodes:
    ('const', 'f', bits, width) / ('const', 'i', value)   an immediate
    ('in', reg, base)                                   the value `reg` had at reset point `base`
    ('op', opcode, *args)                               a pure instruction ('opcode' has every modifier)
    ('vec', *elems)                                     a vector operand
    ('phi', cond, then, else)                           cond ? then : else (cond a predicate term)
    ('opaque', n)                                       an unknown value; never equal to anything else
    ('unreach',)                                        the value on no path (only inside merges)"""

    def __init__(self) -> None:
        self.nodes: list[tuple] = []
        self.index: dict[tuple, int] = {}
        self.fresh = itertools.count()
        self.unreach = self.mk("unreach")

    def mk(self, *node) -> int:
        t = self.index.get(node)
        if t is None:
            t = self.index[node] = len(self.nodes)
            self.nodes.append(node)
        return t

    def opaque(self) -> int:
        return self.mk("opaque", next(self.fresh))

    def phi(self, cond: int, then: int, other: int) -> int:
        if then == other or other == self.unreach:
            return then
        if then == self.unreach:
            return other
        return self.mk("phi", cond, then, other)


@dataclass
class State:
    regs: dict[str, int]
    path: tuple[tuple[int, bool], ...]   # branch conditions taken since the last reset point
    base: int                            # the reset point: unknown registers are ('in', reg, base)
    origin: int | None = None            # at a label: the branch that led here (None: falling through)

    def copy(self) -> State:
        return State(dict(self.regs), self.path, self.base)


@dataclass(frozen=True)
class Incoming:
    """The paths meeting at a label: their states, and how many branch conditions they all share."""

    preds: list[State]
    shared: int

    def under(self, prefix: tuple[tuple[int, bool], ...]) -> list[State]:
        """The paths whose conditions after the shared ones begin with `prefix`."""
        return [p for p in self.preds if p.path[self.shared:self.shared + len(prefix)] == prefix]


# selp copies one of its two operands bit for bit: its type suffix says only how wide they are (LLVM writes
# selp.b32 or selp.f32 for the same select of a float register, as its uses want it).
SELECT_WIDTH = {f".{kind}{bits}": f".b{bits}" for kind in "bfus" for bits in (16, 32, 64)}


def opname(ins: Instr) -> str:
    mods = ins.mods
    if ins.opcode == "selp":
        mods = tuple(SELECT_WIDTH.get(m, m) for m in mods)
    return ins.opcode + "".join(mods)


class TermBuilder:
    """Runs a body once, in order, giving every register a term at every program point.

    `on_instr(i, ins, state_before, term)` is called for each unpredicated pure instruction with the term
    of its result; `on_merge(i, state_after, reg, term, incoming)` for each register that became a `phi` at
    label i, `incoming` the paths that met there."""

    def __init__(self, body: list, terms: Terms, on_instr: Callable | None = None,
                 on_merge: Callable | None = None, declared: set[str] | None = None):
        """`declared`: the kernel's registers; any other register read (a special register) is unknown at
        each read, unless it is a launch constant (%tid, %ntid, %ctaid, %nctaid). None: no such check."""
        self.body = body
        self.declared = declared
        self.t = terms
        self.on_instr = on_instr
        self.on_merge = on_merge
        self.labels = {item.name: i for i, item in enumerate(body) if isinstance(item, Label)}
        self.headers = set()      # labels some backward branch targets: values there are not followed
        for i, item in enumerate(body):
            if isinstance(item, Instr) and item.opcode == "bra":
                target = self.labels.get(branch_target(item))
                if target is None:
                    raise Unfollowed
                if target <= i:
                    self.headers.add(target)
        self.producers: dict[int, set[int]] = {}   # term -> unpredicated instructions whose result it is

    def lookup(self, st: State, reg: str) -> int:
        t = st.regs.get(reg)
        return t if t is not None else self.t.mk("in", reg, st.base)

    def operand(self, st: State, op) -> int:
        if isinstance(op, Reg):
            if self.declared is not None and op.name not in self.declared and not LAUNCH_CONSTANT.match(op.name):
                return self.t.opaque()   # %clock, %laneid, %warpid, ...: not one value
            return self.lookup(st, op.name)
        if isinstance(op, FloatImm):
            return self.t.mk("const", "f", op.bits, op.width)
        if isinstance(op, IntImm):
            return self.t.mk("const", "i", op.value)
        if isinstance(op, Vec):
            return self.t.mk("vec", *(self.operand(st, e) for e in op.elems))
        return self.t.opaque()  # a parameter or variable name, an address: not a value we follow

    def run(self) -> State | None:
        """Run the body; the state at its end (None when control cannot fall off the end)."""
        st: State | None = State({}, (), ENTRY)
        pending: dict[str, list[State]] = {}
        for i, item in enumerate(self.body):
            if isinstance(item, Label):
                falling = [dataclasses.replace(st, origin=None)] if st is not None else []
                st = self._label(i, item, pending.pop(item.name, []) + falling)
            elif st is not None:
                st = self._instr(i, item, st, pending)
        self.dangling = bool(pending)
        return st

    def _label(self, i: int, label: Label, preds: list[State]) -> State | None:
        if i in self.headers:
            return State({}, (), i)
        if not preds:
            return None
        if len(preds) == 1:
            return preds[0]
        return self._merge(i, preds)

    def merged(self, i: int, preds: list[State]) -> State:
        """The state where only `preds` meet at label i (no merge is reported)."""
        return preds[0] if len(preds) == 1 else self._merge(i, preds, report=False)

    def _merge(self, i: int, preds: list[State], report: bool = True) -> State:
        n = 0
        while all(len(p.path) > n for p in preds) and len({p.path[n] for p in preds}) == 1:
            n += 1
        same_base = len({p.base for p in preds}) == 1
        out = State(dict(preds[0].regs), preds[0].path[:n], preds[0].base if same_base else i)
        differ: set[str] = set()
        for p in preds[1:]:
            differ.update(reg for reg, _ in preds[0].regs.items() ^ p.regs.items())
        phis = []
        for reg in sorted(differ):
            values = [self.lookup(p, reg) for p in preds]
            if len(set(values)) == 1:
                out.regs[reg] = values[0]
                continue
            out.regs[reg] = term = self._tree([(p.path[n:], v) for p, v in zip(preds, values, strict=True)])
            if self.t.nodes[term][0] == "phi":
                phis.append((reg, term))
        if report and self.on_merge is not None:
            for reg, term in phis:
                self.on_merge(i, out, reg, term, Incoming(preds, n))
        return out

    def _tree(self, entries: list[tuple[tuple, int]]) -> int:
        """The value at a merge as a decision tree over the branch conditions that separate the paths;
        opaque when the paths are not separated by one shared sequence of conditions."""
        if len(entries) == 1 and not entries[0][0]:
            return entries[0][1]
        if any(not path for path, _ in entries):
            return self.t.opaque()
        cond = entries[0][0][0][0]
        if any(path[0][0] != cond for path, _ in entries):
            return self.t.opaque()
        sides = [[(path[1:], v) for path, v in entries if path[0][1] is taken] for taken in (True, False)]
        then, other = (self._tree(side) if side else self.t.unreach for side in sides)
        return self.t.phi(cond, then, other)

    def _instr(self, i: int, ins: Instr, st: State, pending: dict[str, list[State]]) -> State | None:
        guard = None
        if ins.pred is not None:
            guard = (self.lookup(st, ins.pred[0]), not ins.pred[1])   # (condition, value under which it runs)
        if ins.opcode == "bra":
            target = branch_target(ins)
            forward = self.labels[target] > i
            if guard is None:
                if forward:
                    st.origin = i
                    pending.setdefault(target, []).append(st)
                return None
            if forward:
                taken = st.copy()
                taken.path, taken.origin = st.path + (guard,), i
                pending.setdefault(target, []).append(taken)
            st.path = st.path + ((guard[0], not guard[1]),)
            return st
        if ins.opcode in ("ret", "exit"):
            if guard is None:
                return None
            st.path = st.path + ((guard[0], not guard[1]),)
            return st
        results = self._results(ins, st)
        for reg, term in results:
            if guard is not None:
                old = self.lookup(st, reg)
                term = self.t.phi(guard[0], term, old) if guard[1] else self.t.phi(guard[0], old, term)
            elif self._is_pure(ins):
                self.producers.setdefault(term, set()).add(i)
            if self.on_instr is not None and guard is None and len(results) == 1 and self._is_pure(ins):
                self.on_instr(i, ins, st, term)
            st.regs[reg] = term
        return st

    @staticmethod
    def _is_pure(ins: Instr) -> bool:
        return ins.opcode in PURE and not (IMPURE_MODIFIERS & set(ins.mods))

    def _results(self, ins: Instr, st: State) -> list[tuple[str, int]]:
        """(register, term) for each register the instruction writes."""
        dsts = written(ins)
        if not dsts:
            return []
        if not self._is_pure(ins):
            return [(r, self.t.opaque()) for r in dsts]
        dst = ins.operands[0]
        srcs = ins.operands[1:]
        if ins.opcode == "mov" and isinstance(dst, Reg) and len(srcs) == 1 and \
                isinstance(srcs[0], Reg | FloatImm | IntImm):
            return [(dst.name, self.operand(st, srcs[0]))]   # a copy of bits: transparent
        value = self.t.mk("op", opname(ins), *(self.operand(st, s) for s in srcs))
        if isinstance(dst, Reg):
            return [(dst.name, value)]
        # a vector destination (`mov.b64 {%lo, %hi}, %fd`, `setp p|q`): element k is a projection
        return [(e.name, self.t.mk("op", f"{opname(ins)}#{k}", value))
                for k, e in enumerate(dst.elems) if isinstance(e, Reg)]


# ---------------------------------------------------------------------------------------------- registers


# Opcodes that surely write their first operand (and read none of it): the only writes that end liveness.
DEFINING = PURE | {"ld", "ldu", "atom", "shfl", "vote", "cvta", "activemask", "match", "redux", "elect", PSEUDO}


def written(ins: Instr) -> list[str]:
    """Registers the instruction may write (its first operand, whatever the opcode): for the terms, an
    instruction not understood makes them unknown."""
    if ins.opcode == "bra" or not ins.operands:
        return []
    return [r for r in regs_in(ins.operands[0]) if isinstance(ins.operands[0], Reg | Vec)]


def defined(ins: Instr) -> list[str]:
    if ins.opcode not in DEFINING or not ins.operands:
        return []
    dst = ins.operands[0]
    if isinstance(dst, Reg):
        return [dst.name]
    if isinstance(dst, Vec):
        return [e.name for e in dst.elems if isinstance(e, Reg)]
    return []


def regs_in(op) -> list[str]:
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Vec):
        return [r for e in op.elems for r in regs_in(e)]
    base = getattr(op, "base", None)
    return [base.name] if isinstance(base, Reg) else []


def uses(ins: Instr) -> set[str]:
    """Registers the instruction may read: every register operand but a surely-written destination, the
    guard, and under a guard the destination too (a predicated write keeps the old value)."""
    defs = defined(ins)
    ops = ins.operands[1:] if defs else ins.operands
    used = {r for op in ops for r in regs_in(op)}
    if ins.pred is not None:
        used.add(ins.pred[0])
        used.update(defs)
    return used
