"""Library idioms: the instruction sequences nvcc emits for accurate libm calls, replaced by ideal functions.

`expf`, `tanhf`, `logf`, `erff`, `exp` and `tanh` compile (nvcc -O3) to range reductions, polynomials and
bit manipulation of float registers. Under exact real arithmetic those sequences do not compute the
function they implement (and the bit tricks are outside the model), so DESIGN §3 states, as named axioms,
that each whole sequence equals its ideal function. This module recognises the sequences and replaces each
by one pseudo-instruction `lark.ideal.<fn>.<type> d, x` whose meaning is `d = fn(x)` (`ideal_call`).

Idioms are data: each is the PTX text nvcc 13.0 emits for `y = f(x)` (`%x` the argument, `%y` the result at
the end of the text; constants written inline, which is the same term as nvcc's `mov.f32 %f, const`).
Recognition is by value, not by text:

* A small abstract interpreter (`TermBuilder`) gives every register, at every program point, a *term*: a
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from semantics.axioms import meaning
from semantics.errors import Unsupported
from semantics.ptx import neginf
from semantics.ptx.ast import Instr, Kernel, Label, Reg, Sym
from semantics.ptx.dead_code import Unfollowed, eliminate
from semantics.ptx.idiom_terms import ENTRY, PSEUDO, Incoming, State, TermBuilder, Terms, defined, uses
from semantics.ptx.libm import BY_NAME, IDIOMS, Idiom
from semantics.ptx.types import TYPES

if TYPE_CHECKING:
    from semantics.ptx.state import ThreadState

COMMUTATIVE = frozenset({"add", "mul", "fma", "mad"})  # in the first two operands, exactly (IEEE included)


# ---------------------------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class _Template:
    idiom: Idiom
    terms: Terms
    root: int
    hole: int


@functools.cache
def _template(idiom: Idiom) -> _Template:
    from semantics.ptx.parser import parse_ptx

    text = f".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry t()\n{{\n{idiom.ptx}\n}}\n"
    terms = Terms()
    builder = TermBuilder(parse_ptx(text).kernels["t"].body, terms)
    st = builder.run()
    if st is None or builder.dangling:
        raise AssertionError(f"template {idiom.name}: its paths do not all reach its end")
    root, hole = builder.lookup(st, "%y"), terms.mk("in", "%x", ENTRY)
    _check_template(idiom, terms, root, hole)
    return _Template(idiom, terms, root, hole)


def _check_template(idiom: Idiom, terms: Terms, root: int, hole: int) -> None:
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

    def __init__(self, tpl: _Template, kt: Terms):
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


def _subtrees(terms: Terms, term: int, prefix: tuple = ()):
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


def _holder(builder: TermBuilder, st: State, term: int) -> Reg | None:
    """A register holding `term` at this point."""
    node = builder.t.nodes[term]
    if node[0] == "in" and node[2] == st.base and node[1] not in st.regs:
        return Reg(node[1])
    return next((Reg(reg) for reg, t in st.regs.items() if t == term), None)


def _find_matches(kernel: Kernel) -> tuple[list[_Match], dict[int, set[int]], Terms]:
    terms = Terms()
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

    def on_instr(i: int, ins: Instr, st: State, term: int) -> None:
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

    def on_merge(i: int, st: State, reg: str, term: int, incoming: Incoming) -> None:
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

    builder = TermBuilder(kernel.body, terms, on_instr, on_merge, declared=set(kernel.regs))
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
        pseudo = Instr(PSEUDO, (f".{m.idiom.fn}", m.idiom.type, f".{m.idiom.name}"), (m.dst, m.src), None, first.line,
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
    items = eliminate(items, candidates, uses, defined)
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
    """`lark.ideal.<fn>.<type>.<idiom> d, x`: d = fn(x), by the axiom of the library sequence `idiom` it replaced
    (`libm.BY_NAME`; fn an ideal function, or one defined from them: log1p, expm1, cosh, sinh,
    `semantics.axioms.DERIVED`)."""
    idiom = BY_NAME.get(ins.mods[2][1:]) if len(ins.mods) == 3 else None
    if idiom is None or len(ins.operands) != 2 or ins.mods[:2] != (f".{idiom.fn}", idiom.type):
        raise Unsupported(f"pseudo-instruction `{ins.opcode}{''.join(ins.mods)}`", f"line {ins.line}")
    fn, ty, axiom = idiom.fn, idiom.type, idiom.axiom
    dst, src = ins.operands
    x = state.read_padded(src, TYPES[ty])
    state.use_axiom(axiom)
    if state.ctx.marks(x):   # exp of a masked lane's -inf padding, or of `m - m_new` from a running max's -inf
        rule = fn if ty == ".f32" else f"{fn}{ty}"   # only the f32 expf sequence is checked at -inf
        state.write(dst, neginf.unary(rule, x, meaning(fn), f"line {ins.line}", state.ctx.marks))
        return
    state.write(dst, meaning(fn)(x))


IDIOM_HANDLERS: dict[str, Callable[[ThreadState, Instr], None]] = {PSEUDO: ideal_call}

__all__ = ["IDIOMS", "IDIOM_HANDLERS", "Idiom", "ideal_call", "rewrite_idioms"]
