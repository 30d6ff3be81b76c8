"""Prefix sums and products: a kernel's running sum (product) at iteration k against the reference's Σ (Π)
over a prefix.

A scan kernel that stores its accumulator inside the loop stores, at iteration k of a loop unrolled s
times, `acc₀ + Sum(0, k, λj. B(j)) + e_0 + … + e_{q-1}`: the whole groups of s elements summed so far plus
the partial group of the current iteration. The reference's element is one comprehension
`Sum(lo, N, λm. h(m))` (torch's cumsum: `Sum(0, c + 1, …)`). Neither bound is a constant (they move with k
and with the storing thread), so the general matcher's counting arguments do not apply; this module
proves the match with one identity instead.

Theorem (prefix split). For integers s ≥ 1, p ≥ 0, K ≥ 0 and lo with lo + s·K + p = N (exact integers),
    Σ_{lo ≤ m < N} h(m) = Σ_{0 ≤ j < K} (Σ_{0 ≤ i < s} h(lo + s·j + i)) + Σ_{0 ≤ t < p} h(lo + s·K + t).
Proof: (j, i) ↦ lo + s·j + i is a bijection from [0, K) × [0, s) onto [lo, lo + s·K), the tail t ↦ lo + s·K + t
one from [0, p) onto [lo + s·K, N); finite sums of reals may be reordered and regrouped.

Used on a store obligation under its hypothesis H (the store happens), with s the number of summands of
the kernel's body B and p a guess (a value of N - lo - s·K in one model of H), the rewrite is justified by
two obligations, each proved unsatisfiable under H:
1. N ≠ lo + s·K + p, with the bounds zero-extended to 128 bits: the identity's premise, on exact integers.
   Since N < 2⁶⁴, every index lo + s·j + i and lo + s·K + t is below 2⁶⁴ too, so the 64-bit index terms
   below compute the exact integers (no wrap-around).
2. j < K ∧ B(j) ≠ Σ_{i<s} h(lo + s·j + i), j a fresh 64-bit constant: the two sums over [0, K) agree term by
   term, hence are equal (the kernel's Sum must start at 0, checked syntactically).
Then the kernel's Sum(0, K, B) and the reference's Sum(lo, N, h) - Σ_t h(lo + s·K + t) are the same real,
and both are replaced by one fresh symbol: the kernel side by the symbol, the reference's comprehension by
the symbol plus the p tail elements. The final obligation compares what is left (the partial group against
the tail), so a wrong scan (a store before the add) leaves a satisfiable difference, whose model is then
confirmed on real numbers like any other.

A loop that nvcc unrolls s times runs a remainder loop after it when the trip count is not a multiple of s:
there the stored value holds two running sums, `Sum(0, K, B) + Sum(0, k, R) + e_0 + …` (the main loop's
whole groups, then the remainder's elements so far). Each running sum but the last is peeled off the front
of the prefix instead of matched with a tail of p elements:

Theorem (prefix peel). For integers s ≥ 1, K ≥ 0 and lo with lo + s·K ≤ N (exact integers),
    Σ_{lo ≤ m < N} h(m) = Σ_{0 ≤ j < K} (Σ_{0 ≤ i < s} h(lo + s·j + i)) + Σ_{lo + s·K ≤ m < N} h(m).
Proof: [lo, N) is the disjoint union of [lo, lo + s·K) and [lo + s·K, N); the first is covered by the same
bijection (j, i) ↦ lo + s·j + i. (The prefix split is the case N = lo + s·K + p, the rest written out.)
Its obligations are 2. above and
1'. N < lo + s·K, with the bounds zero-extended to 128 bits: the premise. Then lo + s·K ≤ N < 2⁶⁴, so the
   64-bit term lo + s·K is the exact integer, and `Sum(lo + s·K, N, h)` (bounds unsigned) is the last sum.
The kernel's Sum becomes a fresh symbol, the reference's comprehension that symbol plus the rest, a
comprehension of its own, which the next running sum of the kernel is then split (or peeled) against. Only
a value holding another running sum of the same kind still unsplit is peeled, so the last one must still
match with a tail of p elements; a peel whose groups are not the reference's first elements (the remainder's
sum tried against the whole prefix) fails obligation 2 and nothing changes.

Products (cumprod, a running `acc *= x`) use the same theorems with Π for Σ and · for +:
    Π_{lo ≤ m < N} h(m) = Π_{0 ≤ j < K} (Π_{0 ≤ i < s} h(lo + s·j + i)) · Π_{0 ≤ t < p} h(lo + s·K + t),
    Π_{lo ≤ m < N} h(m) = Π_{0 ≤ j < K} (Π_{0 ≤ i < s} h(lo + s·j + i)) · Π_{lo + s·K ≤ m < N} h(m),
by the same bijections (finite products of reals may be reordered and regrouped; an empty product is 1).
The group size s counts the factors of B (factors 1 dropped: they multiply by nothing), the kernel's Prod
is found among the factors of the stored value (not its summands), obligation 2 compares B(j) with the
product of the group, and the reference's Prod becomes the symbol times the tail. Nothing else carries
over: a product has no zero tail, no coefficient that distributes over it, and no cut of its range but
the peel's (the product over a range split in two parts is the product of the parts' products).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.comprehension import COMPREHENSIONS, PROD, SUM, is_comprehension
from semantics.properties import compose, prefix_proofs
from semantics.terms import applications, reaching, subterms

MAX_TAIL = 64        # the partial group is at most one unrolled iteration: a few elements, never a row
MAX_GROUP = 64


@dataclass(frozen=True)
class Monoid:
    """The operation of a running reduction: its comprehension, how a term splits into operands (the
    neutral element dropped: it must not count as a group's element), and how operands combine."""

    name: str
    decl: z3.FuncDeclRef
    is_node: Callable[[z3.ExprRef], bool]
    neutral: int
    combine: Callable[[list[z3.ExprRef]], z3.ExprRef]

    def operands(self, term: z3.ExprRef) -> list[z3.ExprRef]:
        if self.is_node(term):
            return [t for child in term.children() for t in self.operands(child)]
        if z3.is_rational_value(term) and term.as_fraction() == self.neutral:
            return []
        return [term]

    def of(self, terms: list[z3.ExprRef]) -> z3.ExprRef:
        return terms[0] if len(terms) == 1 else self.combine(terms)


SUM_MONOID = Monoid("sum", SUM, z3.is_add, 0, lambda ts: z3.Sum(ts))
PROD_MONOID = Monoid("product", PROD, z3.is_mul, 1, lambda ts: z3.Product(ts))
MONOIDS = (SUM_MONOID, PROD_MONOID)


def _innermost(term: z3.ExprRef, decl: z3.FuncDeclRef) -> list[z3.ExprRef]:
    """The `decl` comprehensions in `term` whose bodies contain no comprehension, each once."""
    holding = reaching(term, COMPREHENSIONS)
    return [t for t in applications(term, (decl,)) if t.arg(2).get_id() not in holding]


def _wide(term: z3.BitVecRef) -> z3.BitVecRef:
    return z3.ZeroExt(128 - term.size(), term)


class PrefixSplitter:
    """Rewrites a kernel running sum (product) and the reference's prefix comprehension to one shared symbol.

    `prove(name, formula)` must return True only when `hypothesis ∧ formula` is proved unsatisfiable (it also
    records the obligation); `guess(term)` returns the value of a bit-vector term in one model of the
    hypothesis, or None (an untrusted guess: every use of it is proved first)."""

    def __init__(self, key: str, prove: Callable[[str, z3.BoolRef], bool],
                 guess: Callable[[z3.BitVecRef], int | None], equate: Callable | None = None):
        self.key = key
        self.prove = prove
        self.guess = guess
        self.equate = equate   # the split as a kernel theorem (`prefix_proofs.equation`), or None
        self.count = 0
        self.steps: list[compose.Step] = []

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        for op in MONOIDS:
            kernel, reference = self._rewrite(op, kernel, reference)
        return kernel, reference

    def _rewrite(self, op: Monoid, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        """The running reductions of `op` among the operands of the kernel's value (a sum's summands, a
        product's factors), each against the reference's innermost comprehensions of the same kind, until
        none splits: a peel leaves the rest of the prefix for the next running reduction, whatever their
        order in the value."""
        running = [t for t in op.operands(kernel) if z3.is_app(t) and t.decl() == op.decl
                   and not any(is_comprehension(s) for s in subterms(t.arg(2).body()))]
        tried: dict[tuple[int, int], tuple] = {}   # the pairs themselves kept alive: z3 reuses a freed term's id
        while (step := self._step(op, running, reference, tried)) is not None:
            ck, cr, symbol, rest, s, tail = step
            running.remove(ck)
            combined = op.of([ck, rest]) if rest is not None else ck
            equation = self.equate(ck, cr, s, tail, combined) if self.equate else None
            self.steps.append(compose.Step(kernel, reference, equation, (symbol, ck)))
            kernel = z3.substitute(kernel, (ck, symbol))
            reference = z3.substitute(reference, (cr, op.of([symbol, rest]) if rest is not None else symbol))
        return kernel, reference

    def _step(self, op: Monoid, running: list[z3.ExprRef], reference: z3.ExprRef, tried: dict):
        """The first (kernel reduction, reference comprehension) pair not tried before that splits, with the
        symbol and the rest; None when no pair does."""
        for ck in running:
            for cr in _innermost(reference, op.decl):
                if (ck.get_id(), cr.get_id()) in tried:
                    continue
                tried[ck.get_id(), cr.get_id()] = (ck, cr)
                replaced = self._split(op, ck, cr, peel=len(running) > 1)
                if replaced is not None:
                    return ck, cr, *replaced
        return None

    def _split(self, op: Monoid, ck: z3.ExprRef, cr: z3.ExprRef,
               peel: bool) -> tuple[z3.ArithRef, z3.ArithRef | None, int, int | None] | None:
        """The kernel's reduction `ck` as a symbol, what remains of the reference's `cr` beside it (its last p
        elements, or with `peel` the comprehension over the rest of its range), the group size s and p (None
        for a peel); None when the obligations are not proved."""
        lo_k, count, body_k = ck.children()
        lo, end, body_r = cr.children()
        if not (z3.is_bv_value(z3.simplify(lo_k)) and z3.simplify(lo_k).as_long() == 0):
            return None
        if z3.is_bv_value(z3.simplify(lo)) and z3.is_bv_value(z3.simplify(end)):
            return None     # a fixed domain, not a prefix: the general matcher's reindexing proves it cheaply
        j = z3.BitVec(f"prefix_j!{self.key}.{self.count}", 64)  # named, not fresh: obligation texts are hashed
        lanes = op.operands(z3.substitute_vars(body_k.body(), j))
        s = len(lanes)
        if not 1 <= s <= MAX_GROUP:
            return None

        def h(index: z3.BitVecRef) -> z3.ArithRef:
            return z3.substitute_vars(body_r.body(), index)

        where = f"{self.key}: a running {op.name} of {s}-element groups against a prefix"
        p = self.guess(z3.simplify(_wide(end) - _wide(lo) - s * _wide(count)))
        if p is not None and 0 <= p <= MAX_TAIL and \
                self.prove(f"{where}: the prefix has {s}·K + {p} elements",
                           _wide(end) != _wide(lo) + s * _wide(count) + p):
            rest, tail = op.of([h(lo + s * count + t) for t in range(p)]) if p else None, p
        elif peel and self.prove(f"{where}: the prefix has at least {s}·K elements",
                                 z3.ULT(_wide(end), _wide(lo) + s * _wide(count))):
            rest, tail = op.decl(z3.simplify(lo + s * count, elim_sign_ext=False), end, body_r), None
        else:
            return None
        group = op.of([h(lo + s * j + i) for i in range(s)]) if s > 1 else h(lo + j)
        if not self.prove(f"{where}: each group of the kernel's {op.name} is {s} consecutive reference elements",
                          z3.And(z3.ULT(j, count), op.of(lanes) != group)):
            return None
        symbol = z3.Real(f"prefix!{self.key}.{self.count}")
        self.count += 1
        return symbol, rest, s, tail


class Chain:
    """Rewriters applied in order: each gets what the previous one left. `steps` are their rewrites for
    `compose.close`: a rewriter's own `steps` where it gives them, else one opaque step per rewriter that
    changed something."""

    def __init__(self, *rewriters):
        self.rewriters = rewriters
        self.steps: list[compose.Step] = []

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        for r in self.rewriters:
            new = r.rewrite(kernel, reference)
            own = getattr(r, "steps", None)
            self.steps += own if own is not None else compose.opaque(kernel, reference, new)
            kernel, reference = new
        return kernel, reference

    @property
    def meanings(self) -> dict[str, z3.ExprRef]:
        """What the rewriters' symbols stand for, where they say (`reductions.Matcher.meanings`)."""
        return {name: term for r in self.rewriters for name, term in getattr(r, "meanings", {}).items()}


def splitter(hypothesis: z3.BoolRef, key: str, checker: Checker, timeout_s: float, record) -> PrefixSplitter:
    """A PrefixSplitter whose obligations are checked (and recorded) under `hypothesis`."""
    def prove(name: str, formula: z3.BoolRef) -> bool:
        ob = Obligation(f"equivalence: {name}", "equivalence", z3.And(hypothesis, formula))
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        return outcome.status == PROVED

    model: list = []

    def guess(term: z3.BitVecRef) -> int | None:
        if z3.is_bv_value(term):
            return term.as_long()
        if not model:
            solver = z3.Solver()
            solver.set("timeout", 5000)
            solver.add(hypothesis)
            model.append(solver.model() if solver.check() == z3.sat else None)
        if model[0] is None:
            return None
        value = model[0].eval(term, model_completion=True)
        return value.as_long() if z3.is_bv_value(value) else None

    return PrefixSplitter(key, prove, guess, prefix_proofs.equations(hypothesis, checker, timeout_s, record))
