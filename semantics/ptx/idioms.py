"""Library idioms: the instruction sequences nvcc emits for accurate libm calls, replaced by ideal functions.

`expf`, `tanhf`, `logf`, `erff`, `exp` and `tanh` compile (nvcc -O3) to range reductions, polynomials and
bit manipulation of float registers. Under exact real arithmetic those sequences do not compute the
function they implement (and the bit tricks are outside the model), so DESIGN §3 states, as named axioms,
that each whole sequence equals its ideal function. This module recognises the sequences and replaces each
by one pseudo-instruction `lark.ideal.<fn>.<type> d, x` whose meaning is `d = fn(x)` (`ideal_call`).

Idioms are data: each is the PTX text nvcc 13.0 emits for `y = f(x)` (`%x` the argument, `%y` the result at
the end of the text; constants written inline, which is the same term as nvcc's `mov.f32 %f, const`).
Recognition is by value, not by text:

* A small abstract interpreter (`_TermBuilder`) gives every register, at every program point, a *term*: a
  hash-consed expression over the instruction's full opcode (every modifier included) and the terms of
  its operands. `mov` of a register or an immediate is transparent (a register copy or a constant, bit for
  bit), so register names, constants held in registers or written inline, constants shared between calls
  and interleaving with unrelated instructions do not matter. A predicated write is `phi(p, new, old)`;
  at a label where forward paths meet, a register that differs is `phi` over the branch conditions that
  separate the paths (gated SSA); anything else (a loop header, paths of unrelated origin) is an opaque
  term that matches nothing. Only pure instructions (a deterministic function of their operands) build
  terms; loads, atomics, shuffles, carries, and special registers other than %tid/%ntid/%ctaid/%nctaid
  (e.g. %clock) get a fresh opaque term at each read.
* The template text is run through the same interpreter; the idiom matches where a kernel term equals the
  template's result term with `%x` bound to one kernel term: same opcodes and modifiers, same constants
  bit for bit, same dataflow and control flow. The operands of add, mul and fma may be swapped (IEEE
  addition and multiplication commute exactly). The final product of `expf` may be contracted into the
  next addition (`fma.rn(e, s, c)` instead of `mul(e, s)`); it then becomes `lark.ideal` into a fresh
  register followed by `add d, tmp, c`.

Rewriting is semantics-preserving given the axiom: the pseudo-instruction is inserted where the matched
value is computed (replacing the final instruction, or right after the label where the idiom's paths
meet), so it rewrites the register with the value it already holds. Afterwards the idiom's instructions
are deleted where their results are dead (liveness over the control-flow graph; only pure instructions
that took part in a match are ever deleted) and branches to the very next instruction are dropped. An
intermediate that is still live elsewhere simply stays. Anything that differs from a template in any way
is left alone and is reported `unknown` by the executor as before.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from semantics.axioms import meaning
from semantics.errors import Unsupported
from semantics.ptx.ast import FloatImm, Instr, IntImm, Kernel, Label, Reg, Sym, Vec
from semantics.ptx.dead_code import Unfollowed, branch_target, eliminate
from semantics.ptx.libm import AXIOM_OF, IDIOMS, Idiom
from semantics.ptx.types import TYPES

if TYPE_CHECKING:
    from semantics.ptx.state import ThreadState

PSEUDO = "lark.ideal"


# ---------------------------------------------------------------------------------------------- terms

# Opcodes whose result is a deterministic function of their operands alone (no memory, no other thread,
# no carry flag, no clock): only these build structured terms.
PURE = frozenset({"add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "neg", "abs", "and", "or", "xor",
                  "not", "cnot", "shl", "shr", "setp", "selp", "mov", "cvt", "copysign", "ex2", "lg2", "rcp",
                  "sqrt", "rsqrt", "tanh", "sin", "cos", "popc", "clz", "brev", "bfe", "bfi", "prmt", "testp",
                  "mul24", "mad24", "sad"})
IMPURE_MODIFIERS = frozenset({".cc"})
COMMUTATIVE = frozenset({"add", "mul", "fma", "mad"})  # in the first two operands, exactly (IEEE included)

ENTRY = -1
_LAUNCH_CONSTANT = re.compile(r"%(tid|ntid|ctaid|nctaid)\.[xyz]$")


class _Terms:
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
class _State:
    regs: dict[str, int]
    path: tuple[tuple[int, bool], ...]   # branch conditions taken since the last reset point
    base: int                            # the reset point: unknown registers are ('in', reg, base)
    origin: int | None = None            # at a label: the branch that led here (None: falling through)

    def copy(self) -> _State:
        return _State(dict(self.regs), self.path, self.base)


@dataclass(frozen=True)
class Incoming:
    """The paths meeting at a label: their states, and how many branch conditions they all share."""

    preds: list[_State]
    shared: int

    def under(self, prefix: tuple[tuple[int, bool], ...]) -> list[_State]:
        """The paths whose conditions after the shared ones begin with `prefix`."""
        return [p for p in self.preds if p.path[self.shared:self.shared + len(prefix)] == prefix]


def _opname(ins: Instr) -> str:
    return ins.opcode + "".join(ins.mods)


class _TermBuilder:
    """Runs a body once, in order, giving every register a term at every program point.

    `on_instr(i, ins, state_before, term)` is called for each unpredicated pure instruction with the term
    of its result; `on_merge(i, state_after, reg, term, incoming)` for each register that became a `phi` at
    label i, `incoming` the paths that met there."""

    def __init__(self, body: list, terms: _Terms, on_instr: Callable | None = None,
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

    def lookup(self, st: _State, reg: str) -> int:
        t = st.regs.get(reg)
        return t if t is not None else self.t.mk("in", reg, st.base)

    def operand(self, st: _State, op) -> int:
        if isinstance(op, Reg):
            if self.declared is not None and op.name not in self.declared and not _LAUNCH_CONSTANT.match(op.name):
                return self.t.opaque()   # %clock, %laneid, %warpid, ...: not one value
            return self.lookup(st, op.name)
        if isinstance(op, FloatImm):
            return self.t.mk("const", "f", op.bits, op.width)
        if isinstance(op, IntImm):
            return self.t.mk("const", "i", op.value)
        if isinstance(op, Vec):
            return self.t.mk("vec", *(self.operand(st, e) for e in op.elems))
        return self.t.opaque()  # a parameter or variable name, an address: not a value we follow

    def run(self) -> _State | None:
        """Run the body; the state at its end (None when control cannot fall off the end)."""
        st: _State | None = _State({}, (), ENTRY)
        pending: dict[str, list[_State]] = {}
        for i, item in enumerate(self.body):
            if isinstance(item, Label):
                falling = [dataclasses.replace(st, origin=None)] if st is not None else []
                st = self._label(i, item, pending.pop(item.name, []) + falling)
            elif st is not None:
                st = self._instr(i, item, st, pending)
        self.dangling = bool(pending)
        return st

    def _label(self, i: int, label: Label, preds: list[_State]) -> _State | None:
        if i in self.headers:
            return _State({}, (), i)
        if not preds:
            return None
        if len(preds) == 1:
            return preds[0]
        return self._merge(i, preds)

    def merged(self, i: int, preds: list[_State]) -> _State:
        """The state where only `preds` meet at label i (no merge is reported)."""
        return preds[0] if len(preds) == 1 else self._merge(i, preds, report=False)

    def _merge(self, i: int, preds: list[_State], report: bool = True) -> _State:
        n = 0
        while all(len(p.path) > n for p in preds) and len({p.path[n] for p in preds}) == 1:
            n += 1
        same_base = len({p.base for p in preds}) == 1
        out = _State(dict(preds[0].regs), preds[0].path[:n], preds[0].base if same_base else i)
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

    def _instr(self, i: int, ins: Instr, st: _State, pending: dict[str, list[_State]]) -> _State | None:
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

    def _results(self, ins: Instr, st: _State) -> list[tuple[str, int]]:
        """(register, term) for each register the instruction writes."""
        dsts = _written(ins)
        if not dsts:
            return []
        if not self._is_pure(ins):
            return [(r, self.t.opaque()) for r in dsts]
        dst = ins.operands[0]
        srcs = ins.operands[1:]
        if ins.opcode == "mov" and isinstance(dst, Reg) and len(srcs) == 1 and \
                isinstance(srcs[0], Reg | FloatImm | IntImm):
            return [(dst.name, self.operand(st, srcs[0]))]   # a copy of bits: transparent
        value = self.t.mk("op", _opname(ins), *(self.operand(st, s) for s in srcs))
        if isinstance(dst, Reg):
            return [(dst.name, value)]
        # a vector destination (`mov.b64 {%lo, %hi}, %fd`, `setp p|q`): element k is a projection
        return [(e.name, self.t.mk("op", f"{_opname(ins)}#{k}", value))
                for k, e in enumerate(dst.elems) if isinstance(e, Reg)]


# ---------------------------------------------------------------------------------------------- registers


# Opcodes that surely write their first operand (and read none of it): the only writes that end liveness.
_DEFINING = PURE | {"ld", "ldu", "atom", "shfl", "vote", "cvta", "activemask", "match", "redux", "elect", PSEUDO}


def _written(ins: Instr) -> list[str]:
    """Registers the instruction may write (its first operand, whatever the opcode): for the terms, an
    instruction not understood makes them unknown."""
    if ins.opcode == "bra" or not ins.operands:
        return []
    return [r for r in _regs_in(ins.operands[0]) if isinstance(ins.operands[0], Reg | Vec)]


def _def_operand_regs(ins: Instr) -> list[str]:
    if ins.opcode not in _DEFINING or not ins.operands:
        return []
    dst = ins.operands[0]
    if isinstance(dst, Reg):
        return [dst.name]
    if isinstance(dst, Vec):
        return [e.name for e in dst.elems if isinstance(e, Reg)]
    return []


def _regs_in(op) -> list[str]:
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Vec):
        return [r for e in op.elems for r in _regs_in(e)]
    base = getattr(op, "base", None)
    return [base.name] if isinstance(base, Reg) else []


def _uses(ins: Instr) -> set[str]:
    """Registers the instruction may read: every register operand but a surely-written destination, the
    guard, and under a guard the destination too (a predicated write keeps the old value)."""
    defs = _def_operand_regs(ins)
    ops = ins.operands[1:] if defs else ins.operands
    used = {r for op in ops for r in _regs_in(op)}
    if ins.pred is not None:
        used.add(ins.pred[0])
        used.update(defs)
    return used


# ---------------------------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class _Template:
    idiom: Idiom
    terms: _Terms
    root: int
    hole: int


@functools.cache
def _template(idiom: Idiom) -> _Template:
    from semantics.ptx.parser import parse_ptx

    text = f".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry t()\n{{\n{idiom.ptx}\n}}\n"
    terms = _Terms()
    builder = _TermBuilder(parse_ptx(text).kernels["t"].body, terms)
    st = builder.run()
    if st is None or builder.dangling:
        raise AssertionError(f"template {idiom.name}: its paths do not all reach its end")
    root, hole = builder.lookup(st, "%y"), terms.mk("in", "%x", ENTRY)
    _check_template(idiom, terms, root, hole)
    return _Template(idiom, terms, root, hole)


def _check_template(idiom: Idiom, terms: _Terms, root: int, hole: int) -> None:
    """A template's result depends on %x only, through pure instructions and constants."""
    todo, seen = [root], set()
    while todo:
        t = todo.pop()
        if t in seen or t == hole:
            continue
        seen.add(t)
        node = terms.nodes[t]
        if node[0] in ("in", "opaque", "unreach"):
            raise AssertionError(f"template {idiom.name} depends on {node}")
        if node[0] == "op":
            todo.extend(node[2:])
        elif node[0] in ("vec", "phi"):
            todo.extend(node[1:])


# ---------------------------------------------------------------------------------------------- matching

_FAIL = object()


class _Matcher:
    """Structural matching of a template term (with hole %x) against a kernel term."""

    def __init__(self, tpl: _Template, kt: _Terms):
        self.tpl = tpl
        self.kt = kt
        self.memo: dict[tuple[int, int, int | None], object] = {}

    def match(self, t: int, k: int, bound: int | None):
        """The binding of the hole under which kernel term k equals template term t, or _FAIL."""
        key = (t, k, bound)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = _FAIL   # cycles cannot occur (terms are built bottom-up); this only guards re-entry
        result = self._match(t, k, bound)
        self.memo[key] = result
        return result

    def _match(self, t: int, k: int, bound: int | None):
        if t == self.tpl.hole:
            return k if bound is None or bound == k else _FAIL
        tn, kn = self.tpl.terms.nodes[t], self.kt.nodes[k]
        if tn[0] != kn[0]:
            return _FAIL
        if tn[0] == "const":
            return bound if tn == kn else _FAIL
        if tn[0] == "op":
            if tn[1] != kn[1] or len(tn) != len(kn):
                return _FAIL
            return self.args(tn[2:], kn[2:], bound, tn[1].split(".")[0] in COMMUTATIVE)
        if tn[0] in ("vec", "phi"):
            if len(tn) != len(kn):
                return _FAIL
            return self.args(tn[1:], kn[1:], bound, False)
        return _FAIL

    def args(self, targs: tuple, kargs: tuple, bound, commutative: bool):
        orders = [kargs]
        if commutative and len(kargs) >= 2:
            orders.append((kargs[1], kargs[0], *kargs[2:]))
        for ks in orders:
            b = bound
            for ta, ka in zip(targs, ks, strict=True):
                b = self.match(ta, ka, b)
                if b is _FAIL:
                    break
            else:
                return b
        return _FAIL

    def pairs(self, t: int, k: int, bound: int, out: set[int]) -> None:
        """The kernel terms matched by template terms other than the hole and constants (the idiom's
        internal values), under the final binding."""
        if t == self.tpl.hole or k in out:
            return
        tn, kn = self.tpl.terms.nodes[t], self.kt.nodes[k]
        out.add(k)
        if tn[0] == "const":
            return
        if tn[0] == "op":
            targs, kargs, comm = tn[2:], kn[2:], tn[1].split(".")[0] in COMMUTATIVE
        else:
            targs, kargs, comm = tn[1:], kn[1:], False
        orders = [kargs] + ([(kargs[1], kargs[0], *kargs[2:])] if comm and len(kargs) >= 2 else [])
        for ks in orders:
            if all(self.match(ta, ka, bound) is not _FAIL for ta, ka in zip(targs, ks, strict=True)):
                for ta, ka in zip(targs, ks, strict=True):
                    self.pairs(ta, ka, bound, out)
                return


@dataclass
class _Match:
    idiom: Idiom
    index: int                 # the replaced instruction, or the label the pseudo-instruction follows
    at_label: bool
    dst: Reg
    src: Reg
    addend: object | None      # the fused addition's other operand
    internal: set[int]         # kernel terms computed by the idiom (and the constants it uses)
    edges: tuple | None = None  # at a label: only the paths from these branches (None: falling through)


def _subtrees(terms: _Terms, term: int, prefix: tuple = ()):
    """(path prefix, phi) for every phi below the root of a merge's decision tree, the prefix the branch
    conditions (cond, taken) that lead to it."""
    node = terms.nodes[term]
    if node[0] != "phi":
        return
    for taken, child in ((True, node[2]), (False, node[3])):
        below = (*prefix, (node[1], taken))
        if terms.nodes[child][0] == "phi":
            yield below, child
            yield from _subtrees(terms, child, below)


def _holder(builder: _TermBuilder, st: _State, term: int) -> Reg | None:
    """A register holding `term` at this point."""
    node = builder.t.nodes[term]
    if node[0] == "in" and node[2] == st.base and node[1] not in st.regs:
        return Reg(node[1])
    return next((Reg(reg) for reg, t in st.regs.items() if t == term), None)


def _find_matches(kernel: Kernel) -> tuple[list[_Match], dict[int, set[int]], _Terms]:
    terms = _Terms()
    templates = [_template(i) for i in IDIOMS]
    by_root: dict[str, list[_Template]] = {}
    fused: dict[str, list[_Template]] = {}
    at_merge: list[_Template] = []
    for tpl in templates:
        node = tpl.terms.nodes[tpl.root]
        if node[0] == "phi":
            at_merge.append(tpl)
        else:
            by_root.setdefault(node[1], []).append(tpl)
            if tpl.idiom.fusable:
                fused.setdefault(f"fma.rn{tpl.idiom.type}", []).append(tpl)
    matches: list[_Match] = []

    def found(tpl: _Template, matcher: _Matcher, troot: int, kroot: int, bound, index, at_label, st, dst,
              addend=None, edges=None) -> bool:
        src = _holder(builder, st, bound)
        if src is None:
            return False
        internal: set[int] = set()
        matcher.pairs(troot, kroot, bound, internal)
        matches.append(_Match(tpl.idiom, index, at_label, dst, src, addend, internal, edges))
        claimed.add(kroot)
        return True

    def on_instr(i: int, ins: Instr, st: _State, term: int) -> None:
        node = terms.nodes[term]
        if node[0] != "op" or not isinstance(ins.operands[0], Reg) or term in claimed:
            return   # (a claimed term: a copy of a value already replaced, `mov.b32 %r1, %f2`)
        for tpl in by_root.get(node[1], ()):
            m = _Matcher(tpl, terms)
            bound = m.match(tpl.root, term, None)
            if bound is not _FAIL:
                found(tpl, m, tpl.root, term, bound, i, False, st, ins.operands[0])
                return
        for tpl in fused.get(node[1], ()) if len(node) == 5 else ():
            # fma(e, s, c) where the template ends in mul(e, s): match the product's two factors
            m = _Matcher(tpl, terms)
            troot = tpl.terms.nodes[tpl.root]
            bound = m.args(troot[2:], node[2:4], None, True)
            if bound is not _FAIL:
                product = terms.mk("op", troot[1], *node[2:4])
                found(tpl, m, tpl.root, product, bound, i, False, st, ins.operands[0], ins.operands[3])
                return

    def merge_match(term: int) -> tuple[_Template, _Matcher, object] | None:
        cond = terms.nodes[terms.nodes[term][1]]
        for tpl in at_merge:
            if cond[:2] != tpl.terms.nodes[tpl.terms.nodes[tpl.root][1]][:2]:
                continue  # a different branch condition (quick filter)
            m = _Matcher(tpl, terms)
            bound = m.match(tpl.root, term, None)
            if bound is not _FAIL:
                return tpl, m, bound
        return None

    def on_merge(i: int, st: _State, reg: str, term: int, incoming: Incoming) -> None:
        hit = merge_match(term)
        if hit is not None:
            found(hit[0], hit[1], hit[0].root, term, hit[2], i, True, st, Reg(reg))
            return
        if i in split:
            return   # one idiom per label is met on some of its paths only (each gets the paths' own label)
        for prefix, sub in _subtrees(terms, term):
            # `x > 20 ? x : log1pf(expf(x))`: the idiom's paths meet here with another's; on the paths under
            # `prefix` the register holds the idiom's value, so the pseudo-instruction goes on those edges
            if sub in claimed:
                continue   # computed (and replaced) where its own paths met: this is a copy of it
            hit = merge_match(sub)
            preds = incoming.under(prefix)
            if hit is None or not preds or len(preds) == len(incoming.preds):
                continue
            if found(hit[0], hit[1], hit[0].root, sub, hit[2], i, True, builder.merged(i, preds), Reg(reg),
                     edges=tuple(p.origin for p in preds)):
                split.add(i)
                return

    split: set[int] = set()
    claimed: set[int] = set()     # kernel terms already matched

    builder = _TermBuilder(kernel.body, terms, on_instr, on_merge, declared=set(kernel.regs))
    builder.run()
    return matches, builder.producers, terms


# ---------------------------------------------------------------------------------------------- rewriting


def rewrite_idioms(kernel: Kernel) -> tuple[Kernel, list[str]]:
    """The kernel with every recognised library sequence replaced by a `lark.ideal` pseudo-instruction, and
    the names of the idioms used (one per replacement, in body order). Unchanged when nothing matches."""
    try:
        matches, producers, terms = _find_matches(kernel)
    except Unfollowed:
        return kernel, []
    if not matches:
        return kernel, []
    body = kernel.body
    regs = dict(kernel.regs)
    replace: dict[int, list[Instr]] = {}
    after: dict[int, list[Instr]] = {}
    before: dict[int, list] = {}          # a label: the block some of its paths now pass first
    retarget: dict[int, str] = {}         # a branch: the label it now goes to
    candidates: set[int] = set()
    for n, m in enumerate(matches):
        mine = set().union(*(producers.get(t, set()) for t in m.internal)) - {m.index}
        # copies of the argument (log1pf reads x's bits through `mov.b32 %r, %x`): transparent to the terms, so
        # no producer of one, but dead once the sequence is gone
        copies = {i for i, it in enumerate(body) if isinstance(it, Instr) and it.opcode == "mov"
                  and len(it.operands) == 2 and it.operands[1] == m.src and isinstance(it.operands[0], Reg)}
        candidates |= mine | copies
        computed = {i for t in m.internal if terms.nodes[t][0] != "const" for i in producers.get(t, ())}
        first = body[min(computed | ({m.index} if not m.at_label or not computed else set()))]
        pseudo = Instr(PSEUDO, (f".{m.idiom.fn}", m.idiom.type), (m.dst, m.src), None, first.line,
                       getattr(first, "loc", None))
        if m.addend is not None:
            tmp = Reg(f"%lark_idiom{n}")
            regs[tmp.name] = m.idiom.type
            root = body[m.index]
            code = [dataclasses.replace(pseudo, operands=(tmp, m.src)),
                    Instr("add", (m.idiom.type,), (m.dst, tmp, m.addend), None, root.line, root.loc)]
        else:
            code = [pseudo]
        if m.edges is not None:
            _split_edges(m, n, body, code, before, retarget)
            continue
        (after if m.at_label else replace).setdefault(m.index, []).extend(code)
    items: list[tuple[int | None, Instr | Label]] = []
    for i, item in enumerate(body):
        if i in replace:
            items.extend((None, ins) for ins in replace[i])
            continue
        items.extend((None, it) for it in before.get(i, ()))
        if i in retarget:
            item = dataclasses.replace(item, operands=(Sym(retarget[i]),))
        items.append((i, item))
        items.extend((None, ins) for ins in after.get(i, ()))
    items = eliminate(items, candidates, _uses, _def_operand_regs)
    new = dataclasses.replace(kernel, body=[item for _, item in items], regs=regs)
    return new, [m.idiom.name for m in sorted(matches, key=lambda m: m.index)]


def _split_edges(m: _Match, n: int, body: list, code: list[Instr], before: dict, retarget: dict) -> None:
    """The pseudo-instruction on the edges `m.edges` into label `m.index` only: a new label just before it
    that those branches now target (and the path falling through, if it is one of them), holding `code`;
    a path falling through that is not one of them jumps over it."""
    label = body[m.index]
    own = Label(f"$L__lark_idiom{n}", label.line)
    for origin in m.edges:
        if origin is not None:
            retarget[origin] = own.name
    jump = [] if None in m.edges else [Instr("bra", (), (Sym(label.name),), None, label.line)]
    before[m.index] = [*jump, own, *code]


# ---------------------------------------------------------------------------------------------- meaning


def ideal_call(state: ThreadState, ins: Instr) -> None:
    """`lark.ideal.<fn>.<type> d, x`: d = fn(x), by the axiom of the nvcc sequence it replaced (fn an ideal
    function, or one defined from them: log1p, expm1, cosh, sinh, `semantics.axioms.DERIVED`)."""
    if len(ins.mods) != 2 or len(ins.operands) != 2:
        raise Unsupported(f"pseudo-instruction `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    fn, ty = ins.mods[0].lstrip("."), ins.mods[1]
    axiom = AXIOM_OF.get((fn, ty))
    if axiom is None:
        raise Unsupported(f"pseudo-instruction `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    dst, src = ins.operands
    x = state.read(src, TYPES[ty])
    state.use_axiom(axiom)
    state.write(dst, meaning(fn)(x))


IDIOM_HANDLERS: dict[str, Callable[[ThreadState, Instr], None]] = {PSEUDO: ideal_call}

__all__ = ["IDIOMS", "IDIOM_HANDLERS", "Idiom", "ideal_call", "rewrite_idioms"]
