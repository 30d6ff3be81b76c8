"""One term for one reduction: exact normal forms of max/min trees and sums of reals.

A butterfly all-reduce (`shfl.sync.bfly`, what Triton's `tl.max` and `tl.sum` compile to) leaves in every
lane a tree over the same elements built in that lane's own order; reading the lanes' values through
shuffles and shared memory then copies every one of those trees into every thread's value. This module
rewrites terms into a form where such copies are one term. Every rule is an identity over the reals (and
over the extended reals of `semantics.ptx.neginf`, whose padding marker is a real constant here: no rule
looks at what a leaf is, so none builds arithmetic on it):

* max and min are associative, commutative and idempotent: a tree of If(a >= b, a, b) nodes (max; min is
  If(a <= b, a, b)) is the max of its set of leaves, so nested trees are flattened, repeated leaves dropped
  (same term, same value), the leaves sorted by a structural key and rebuilt as one balanced tree;
* + is associative and commutative: a sum is flattened and its summands sorted (each kept as often as it
  occurs);
* a subterm without reals (an index, a lane number, a mask test) becomes z3's simplification of it, which
  z3 guarantees equivalent; an If whose condition becomes a constant is the branch it selects.

Everything else is rebuilt from its normalised children; quantifiers and lambdas are left as they are.

`Normalizer.uniform` adds one more exact step: a max, min or sum whose normal form does not change when
bit k of tid.x is flipped takes the same value at tid.x and tid.x ^ 2^k for every value of every symbol;
where that holds for the bits of a mask, the value at tid.x is the value at tid.x & ~mask (the two differ
by a xor of those bits). That turns a butterfly's lane-symmetric result into one term at the group's
first lane, the same term in every thread that holds it.
"""

from __future__ import annotations

import z3

MAX_ROUNDS = 4   # simplify-and-join rounds for one bit-vector term (two suffice for lane numbers)
EXTREMA = {z3.Z3_OP_GE: "max", z3.Z3_OP_LE: "min"}   # If(a OP b, a, b): its comparison names the reduction


def extremum(term: z3.ExprRef) -> int | None:
    """The comparison kind of an If(a >= b, a, b) (max) or If(a <= b, a, b) (min) node over reals, else None."""
    if not z3.is_app_of(term, z3.Z3_OP_ITE) or not z3.is_arith(term):
        return None
    cond, a, b = term.children()
    kind = cond.decl().kind() if z3.is_app(cond) else None
    if kind in EXTREMA and z3.eq(cond.arg(0), a) and z3.eq(cond.arg(1), b):
        return kind
    return None


def is_extremum_node(term: z3.ExprRef, greater: bool) -> bool:
    """If(a >= b, a, b) (a max node, `greater`) or If(a <= b, a, b) (a min node) over reals."""
    return extremum(term) == (z3.Z3_OP_GE if greater else z3.Z3_OP_LE)


def _is_real_sum(term: z3.ExprRef) -> bool:
    return z3.is_add(term) and z3.is_real(term)


def _ordered(terms: list[z3.ExprRef]) -> list[z3.ExprRef]:
    """`terms` by z3's structural hash (the same in every run: it is computed from the term's structure and
    names), ties broken by the printed term. Equal collections of terms come out in one order."""
    hashes = [t.hash() for t in terms]
    tied = {h for h in hashes if hashes.count(h) > 1} if len(set(hashes)) < len(hashes) else set()
    keyed = [((h, t.sexpr() if h in tied else ""), t) for h, t in zip(hashes, terms, strict=True)]
    return [t for _, t in sorted(keyed, key=lambda kt: kt[0])]


def _balanced(kind: int, leaves: list[z3.ExprRef]) -> z3.ExprRef:
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    a, b = _balanced(kind, leaves[:half]), _balanced(kind, leaves[half:])
    return z3.If(a >= b, a, b) if kind == z3.Z3_OP_GE else z3.If(a <= b, a, b)


def _complemented_slice(t: z3.ExprRef) -> tuple[z3.ExprRef, int, int] | None:
    """(x, h, l) for ~Extract(h, l, x)."""
    if z3.is_app_of(t, z3.Z3_OP_BNOT) and z3.is_app_of(t.arg(0), z3.Z3_OP_EXTRACT):
        h, low = t.arg(0).params()
        return t.arg(0).arg(0), h, low
    return None


def _joined(parts: list[z3.BitVecRef]) -> list[z3.BitVecRef]:
    """The parts of a Concat (high to low) with adjacent complemented slices of one term joined."""
    out: list[z3.BitVecRef] = []
    for part in parts:
        this, last = _complemented_slice(part), _complemented_slice(out[-1]) if out else None
        if this and last and last[0].eq(this[0]) and last[2] == this[1] + 1:
            out[-1] = ~z3.Extract(last[1], this[2], this[0])
        else:
            out.append(part)
    return out


class Normalizer:
    """The normal form of terms, memoised by node id over its lifetime (copies share most of their nodes).
    `tid` and `bits` (the bits of tid.x a block uses) enable `uniform`."""

    def __init__(self, tid: z3.BitVecRef | None = None, bits: int = 0):
        self.tid, self.bits = tid, bits
        self.memo: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}   # id -> (term, normal form): ids stay alive
        self.real: set[int] = set()                                 # terms that are or hold reals
        self.leaves: dict[int, list[z3.ExprRef]] = {}               # normal max/min node -> its leaves
        self.summands: dict[int, list[z3.ExprRef]] = {}             # normal sum -> its summands
        self.settled: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
        self.joined: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
        self.used: dict[int, tuple[z3.ExprRef, int]] = {}

    def __call__(self, term: z3.ExprRef) -> z3.ExprRef:
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in self.memo:
                continue
            if z3.is_bv(t) or not z3.is_app(t) or t.num_args() == 0:
                self._keep(t, self._bits(t) if z3.is_bv(t) else t)
            elif not expanded:
                stack.append((t, True))
                stack.extend((c, False) for c in t.children() if c.get_id() not in self.memo)
            else:
                self._keep(t, self._rebuild(t, [self.memo[c.get_id()][1] for c in t.children()]))
        return self.memo[term.get_id()][1]

    def _bits(self, term: z3.BitVecRef) -> z3.BitVecRef:
        """z3's simplification of a bit-vector term with its complemented slices joined, until that is stable:
        z3 joins Concat(Extract(h, m+1, x), Extract(m, l, x)) into Extract(h, l, x) but leaves the complements
        of such slices apart, or not, depending on how the term was built (a lane number xor a constant,
        shuffled twice, comes out either way). Concat(~Extract(h, m+1, x), ~Extract(m, l, x)) = ~Extract(h, l, x)."""
        for _ in range(MAX_ROUNDS):
            simple = z3.simplify(term, elim_sign_ext=False)
            term = self._join(simple)
            if term.eq(simple):
                break
        return term

    def _join(self, term: z3.BitVecRef) -> z3.BitVecRef:
        done = self.joined

        def visit(t: z3.BitVecRef) -> z3.BitVecRef:
            if t.get_id() in done:
                return done[t.get_id()][1]
            out = t
            if z3.is_app(t) and t.num_args() and z3.is_bv(t):
                kids = [visit(c) if z3.is_bv(c) else c for c in t.children()]
                concat = z3.is_app_of(t, z3.Z3_OP_CONCAT)
                if concat:
                    kids = _joined(kids)
                if concat and len(kids) == 1:
                    out = kids[0]
                elif len(kids) != t.num_args() or not all(a.eq(b) for a, b in zip(kids, t.children(), strict=False)):
                    out = z3.Concat(*kids) if concat else t.decl()(*kids)
            done[t.get_id()] = (t, out)
            return out

        return visit(term)

    def _keep(self, term: z3.ExprRef, normal: z3.ExprRef) -> None:
        self.memo[term.get_id()] = (term, normal)
        self.memo.setdefault(normal.get_id(), (normal, normal))
        if z3.is_arith(term) or any(c.get_id() in self.real for c in term.children()):
            self.real.update((term.get_id(), normal.get_id()))

    def _rebuild(self, term: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
        kind = extremum(term)
        if kind is not None:
            return self._extremum(kind, kids[1:])
        if _is_real_sum(term):
            return self._sum(kids)
        if z3.is_app_of(term, z3.Z3_OP_ITE) and (z3.is_true(kids[0]) or z3.is_false(kids[0])):
            return kids[1] if z3.is_true(kids[0]) else kids[2]
        out = term if all(a.eq(b) for a, b in zip(kids, term.children(), strict=True)) else term.decl()(*kids)
        if z3.is_bool(out) and not any(k.get_id() in self.real for k in kids):
            return z3.simplify(out, elim_sign_ext=False)   # a test of integers: a lane mask, a bound
        return out

    def _extremum(self, kind: int, parts: list[z3.ExprRef]) -> z3.ExprRef:
        """The max (min) of normal `parts`: their leaves, once each, in order, as one balanced tree."""
        leaves = [leaf for k in parts
                  for leaf in (self.leaves[k.get_id()] if extremum(k) == kind and k.get_id() in self.leaves else [k])]
        unique = _ordered(list({leaf.get_id(): leaf for leaf in leaves}.values()))
        out = _balanced(kind, unique)
        if len(unique) > 1:
            self.leaves[out.get_id()] = unique
        return out

    def _sum(self, parts: list[z3.ExprRef]) -> z3.ExprRef:
        """The sum of normal `parts`: their summands, each as often as it occurs, in order."""
        summands = _ordered([s for k in parts for s in self.summands.get(k.get_id(), [k])])
        out = z3.Sum(*summands)
        if len(summands) > 1:
            self.summands[out.get_id()] = summands
        return out

    def _parts(self, term: z3.ExprRef) -> list[z3.ExprRef]:
        """What `uniform` settles below a normal term: a max's (min's) leaves and a sum's summands, never the
        inner nodes of one reduction (a part of a lane-symmetric set need not be symmetric itself), else its
        children."""
        if extremum(term) is not None and term.get_id() in self.leaves:
            return self.leaves[term.get_id()]
        if _is_real_sum(term) and term.get_id() in self.summands:
            return self.summands[term.get_id()]
        return term.children()

    def _with_parts(self, term: z3.ExprRef, parts: list[z3.ExprRef]) -> z3.ExprRef:
        if all(a.eq(b) for a, b in zip(parts, self._parts(term), strict=True)):
            return term
        kind = extremum(term)
        if kind is not None and term.get_id() in self.leaves:
            return self._extremum(kind, parts)
        if _is_real_sum(term) and term.get_id() in self.summands:
            return self._sum(parts)
        return self(term.decl()(*parts))

    def uniform(self, term: z3.ExprRef) -> z3.ExprRef:
        """The normal form of `term` with each max, min and sum that is invariant under flipping some bits of
        tid.x (its normal form unchanged) taken at tid.x with those bits cleared (module docstring). Inner
        reductions first: a sum over lanes of terms that hold a lane-symmetric max is symmetric once the max
        is one term."""
        term = self(term)
        if self.tid is None or not self.bits:
            return term
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in self.settled:
                continue
            if not self._used_bits(t) or not z3.is_app(t):
                self.settled[t.get_id()] = (t, t)
            elif not expanded:
                stack.append((t, True))
                stack.extend((c, False) for c in self._parts(t) if c.get_id() not in self.settled)
            else:
                out = self._settle(self._with_parts(t, [self.settled[c.get_id()][1] for c in self._parts(t)]))
                self.settled[t.get_id()] = (t, out)
        return self.settled[term.get_id()][1]

    def _settle(self, term: z3.ExprRef) -> z3.ExprRef:
        """`term` (normal) at tid.x with its invariant bits cleared, again until none is left: with some bits
        cleared, the normal forms of the flips of others can meet where they did not before."""
        for _ in range(self.bits):
            mask = self._invariant_bits(term) if extremum(term) is not None or _is_real_sum(term) else 0
            if not mask:
                break
            cleared = self.tid & z3.BitVecVal(~mask & ((1 << self.tid.size()) - 1), self.tid.size())
            term = self(z3.substitute(term, (self.tid, cleared)))
        return term

    def _invariant_bits(self, term: z3.ExprRef) -> int:
        """The bits k < `bits` of tid.x that `term` (normal) reads and whose flip leaves its normal form as it is."""
        mask = 0
        for k in range(self.bits):
            if not self._used_bits(term) >> k & 1:
                continue
            flipped = self(z3.substitute(term, (self.tid, self.tid ^ z3.BitVecVal(1 << k, self.tid.size()))))
            if flipped.eq(term):
                mask |= 1 << k
        return mask

    def _used_bits(self, term: z3.ExprRef) -> int:
        """The bits of tid.x that occur in `term` (all of them where tid.x occurs outside an Extract). Only
        chooses which flips to try."""
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in self.used:
                continue
            if t.eq(self.tid):
                self.used[t.get_id()] = (t, (1 << self.tid.size()) - 1)
            elif z3.is_app_of(t, z3.Z3_OP_EXTRACT) and t.arg(0).eq(self.tid):
                high, low = t.params()
                self.used[t.get_id()] = (t, (1 << (high + 1)) - (1 << low))
            elif not z3.is_app(t) or not t.num_args():
                self.used[t.get_id()] = (t, 0 if z3.is_app(t) else (1 << self.tid.size()) - 1)
            elif not expanded:
                stack.append((t, True))
                stack.extend((c, False) for c in t.children() if c.get_id() not in self.used)
            else:
                bits = 0
                for c in t.children():
                    bits |= self.used[c.get_id()][1]
                self.used[t.get_id()] = (t, bits)
        return self.used[term.get_id()][1]
