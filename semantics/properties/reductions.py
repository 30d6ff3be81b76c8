"""The trusted matcher of comprehensions: when a kernel's Sum/Max equals the reference's.

Both sides of an equivalence obligation may contain comprehensions (`semantics.comprehension`). The
solver treats them as uninterpreted, so before the final obligation the matcher proves pairs of them equal
and replaces each proved pair by one fresh symbol. The theorems it relies on, over the reals:

* Sum. The kernel side is one or several Sum comprehensions, each body possibly a sum of lanes
  t_1(j) + … + t_c(j). If φ maps every (family, lane, j) into the reference's range [lo', hi') with
  t(j) = h(φ(j)), every m in [lo', hi') is hit (ψ names the preimage), and the kernel has exactly
  hi' - lo' terms, then φ is a bijection (a surjection between finite sets of equal size) and the two sums
  are equal (finite sums of reals commute and associate).
* Max/Min. max over a set depends only on the set: if every kernel element (each lane at each j, and the
  initial values) equals some reference element, and every reference element equals some kernel element,
  the two maxima are equal.

The reindexings φ (kernel -> reference) and ψ (reference -> kernel) are hints. With a search attached
(`search`, see `semantics.verdict.Provers`), each lane's φ is searched among the prover's alternatives (a
term reading one buffer twice pairs its reads in several ways, only some right) against the very obligations
the matcher then proves itself; without a winner, the prover's first proposal is used, as without a search.

The unions it matches (a block's partial sums, a max tree, an unrolled reduction) are found by
`semantics.properties.unions`.

Products (`Prod`) are not matched here: every step above is stated for sums and maxima, and the unions
(a sum of Sums with one coefficient, a max tree) are sum and max algebra. A Prod is left as it is (its
running form against a prefix is `semantics.properties.prefix`'s), so a comparison that still holds one is
decided only by a counterexample that replays, never by a proof.

Every premise is an obligation (unsat proves it) under the hypothesis that the store happens; the hints
(φ, ψ) come from an untrusted prover.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics import purify
from semantics.canonical import is_extremum_node
from semantics.comprehension import COMPREHENSIONS, MAX_FROM, SUM, is_comprehension
from semantics.properties import arg_reductions, compose, matched_sums, nested_sums, tiled_unions
from semantics.properties.common import model_of
from semantics.properties.fold import MAX_AXES, Fold, Outer, fold
from semantics.properties.tiles import tiles as _tiles
from semantics.properties.unions import EXTREMA, MATCHED, unions, unrolled
from semantics.terms import applications, constants, mentions, reaching


@dataclass(frozen=True)
class Family:
    """A comprehension opened up: lanes t_i over j ∈ [lo, hi), plus (max/min) an initial element. A folded
    family (`outer`) is that comprehension at every τ of an index set: its elements range over (τ, j)."""

    kind: str
    lo: z3.BitVecRef
    hi: z3.BitVecRef
    var: z3.BitVecRef
    lanes: tuple[z3.ArithRef, ...]
    init: z3.ArithRef | None
    outer: Outer | None = None

    def count(self) -> int:
        """How many copies of [lo, hi) the family has (one per point τ of its box)."""
        return self.outer.count if self.outer else 1


def _terms(body: z3.ArithRef) -> list[z3.ArithRef]:
    """The summands of a body (zeros dropped: they add nothing to a sum)."""
    if z3.is_add(body):
        return [t for child in body.children() for t in _terms(child)]
    if z3.is_rational_value(body) and body.as_fraction() == 0:
        return []
    return [body]


def open_family(term: z3.ExprRef, var_name: str, split: bool) -> Family:
    """The comprehension `term` with its bound variable instantiated as a fresh 64-bit constant."""
    decl = term.decl()
    if decl not in MATCHED:
        raise ValueError(f"{decl} is not a comprehension the matcher knows")
    kind = "sum" if decl == SUM else "max" if decl == MAX_FROM else "min"
    args = term.children()
    init, lo, hi, lam = (None, *args) if kind == "sum" else args
    var = z3.BitVec(var_name, 64)
    body = z3.substitute_vars(lam.body(), var)
    if not split:
        lanes = (body,)
    elif kind == "sum":
        lanes = tuple(_terms(body))
    else:
        lanes = tuple(_extremum_leaves(body, kind == "max"))
    return Family(kind, lo, hi, var, lanes, init)


def _extremum_leaves(term: z3.ExprRef, greater: bool) -> list[z3.ExprRef]:
    """The elements of a tree of If(a >= b, a, b) (max) or If(a <= b, a, b) (min) nodes."""
    if is_extremum_node(term, greater):
        return _extremum_leaves(term.arg(1), greater) + _extremum_leaves(term.arg(2), greater)
    return [term]


def innermost(term: z3.ExprRef) -> list[z3.ExprRef]:
    """Comprehensions in `term` whose bodies contain none."""
    holding = reaching(term, COMPREHENSIONS)
    return [t for t in applications(term, COMPREHENSIONS) if t.arg(t.num_args() - 1).get_id() not in holding]


def _in(family: Family, j: z3.BitVecRef) -> z3.BoolRef:
    inside = z3.And(z3.ULE(family.lo, j), z3.ULT(j, family.hi))
    return z3.And(family.outer.contains(family.outer.vars), inside) if family.outer else inside


def _affine(term: z3.BitVecRef, var: z3.BitVecRef) -> tuple[z3.BitVecRef, int] | None:
    """(term at var = 0, stride) when term moves by a constant per step of var (guessed at one point; the
    caller proves the form)."""
    at0 = z3.simplify(z3.substitute(term, (var, z3.BitVecVal(0, 64))), elim_sign_ext=False)
    at1 = z3.simplify(z3.substitute(term, (var, z3.BitVecVal(1, 64))), elim_sign_ext=False)
    consts = [c for c in bv_constants(at1 - at0)]
    step = z3.simplify(z3.substitute(at1 - at0, *[(c, z3.BitVecVal(0, c.size())) for c in consts])) if consts \
        else z3.simplify(at1 - at0)
    if not z3.is_bv_value(step):
        return None
    value = step.as_long()
    return at0, value - (1 << 64) if value >= 1 << 63 else value


def bv_constants(term: z3.ExprRef) -> list[z3.ExprRef]:
    return [c for c in constants(term) if z3.is_bv(c)]


def _free_var(term: z3.ExprRef, var: z3.ExprRef) -> bool:
    return mentions(term, var)


def _size128(family: Family) -> z3.BitVecRef:
    return z3.ZeroExt(64, family.hi) - z3.ZeroExt(64, family.lo)


MAX_ATTEMPTS = 12  # pairings tried per store lane: matching is search, and unmatched terms just stay unknown


class Matcher:
    """Proves comprehension pairs equal under a hypothesis, recording every obligation."""

    def __init__(self, hypothesis: z3.BoolRef, reindex: Callable, checker: Checker, timeout_s: float, record,
                 accepted: dict, key: str, search: Callable | None = None):
        self.hyp = hypothesis
        self.reindex = reindex
        self.search = search
        self.checker = checker
        self.timeout_s = timeout_s
        self.record = record
        self.accepted = accepted
        self.key = key
        self.count = 0
        self.attempts = 0
        self.nests = 0   # nested Sums compared (`nested_sums`), naming their premises
        # symbol name -> the reference comprehension it was proved equal to (replay evaluates it there)
        self.meanings: dict[str, z3.ExprRef] = {}
        self.steps: list[compose.Step] = []   # the rewrites, for `compose.close`
        self.matched: matched_sums.Match | None = None     # how the last comprehensions proved equal were paired

    def within(self, hypothesis: z3.BoolRef, key: str) -> Matcher:
        """A matcher for a premise under a stronger hypothesis, sharing checker, hints and records."""
        return Matcher(hypothesis, self.reindex, self.checker, self.timeout_s, self.record, self.accepted, key,
                       self.search)

    def _obligation(self, name: str, formula: z3.BoolRef) -> Obligation:
        """Unsat proves the premise; divisions by constants named by quotient and remainder (equisatisfiable,
        `semantics.purify.purified`): a window's index terms are far cheaper so."""
        return Obligation(f"equivalence: {name}", "equivalence", purify.purified(z3.And(self.hyp, formula)))

    def _proved(self, name: str, formula: z3.BoolRef) -> bool:
        ob = self._obligation(name, formula)
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED

    def _symbol(self, meaning: z3.ExprRef) -> z3.ArithRef:
        symbol = z3.Real(f"reduction!{self.key}.{self.count}")
        self.count += 1
        self.meanings[str(symbol)] = meaning
        return symbol

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        """Replace proved-equal comprehensions by shared symbols: first the kernel's unions (a sum of several
        Sum comprehensions or a max over several: a reduction split over lanes, loops or threads) wherever they
        occur, innermost first, then pairs, innermost first. A union inside another reduction's body (the
        row max inside softmax's Σ exp(x - max)) becomes a symbol first, which makes the outer one innermost."""
        kernel, reference = arg_reductions.rewrite(self, kernel, reference)   # argmax/argmin folds
        # (an unrolled sum is one flat sum once simplified: nvcc's chain a + (b + (c + …)) is not, before)
        if not innermost(reference) or not (innermost(kernel) or unrolled(z3.simplify(kernel, elim_sign_ext=False))):
            return kernel, reference
        kernel, reference = self._pin_threads(kernel, reference)
        kernel, reference = nested_sums.rewrite(self, kernel, reference)   # its steps recorded by itself
        kernel, reference = self._rewrite_unions(kernel, reference)   # its steps recorded by itself
        progress = True
        while progress:
            progress = False
            for ck in innermost(kernel):
                for cr in innermost(reference):
                    if ck.decl() == cr.decl() and ck.decl() in MATCHED and self._equal([ck], cr):
                        symbol = self._symbol(cr)
                        self.steps.append(compose.Step(kernel, reference, matched_sums.equation(self, ck, cr),
                                                       (symbol, ck)))
                        kernel = z3.substitute(kernel, (ck, symbol))
                        reference = z3.substitute(reference, (cr, symbol))
                        progress = True
                        break
                if progress:
                    break
        if nested_sums.closed_sums(kernel):   # Sums left: an unrolled inner loop against the reference's windows
            kernel, reference = nested_sums.rewrite(self, kernel, reference, unrolled=True)
        return kernel, reference

    def _pin_threads(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        """Where the hypothesis fixes a thread coordinate (thread 0 of a block stores the block's result), put
        the constant in: reads of other threads' values then become terms of concrete threads. Each pin is a
        step with its theorem ⊢ h → value = var, then the kernel side is simplified (a step whose equation
        is the kernel's `simplified`)."""
        for var in bv_constants(kernel):
            if not str(var).startswith("tid."):
                continue
            value = self._constant_under_hypothesis(var)
            if value is None:
                continue
            pinned = compose.fixed(self.hyp, var, z3.BitVecVal(value, var.size()), self.checker, self.timeout_s,
                                   f"equivalence: the storing thread has {var} = {value}", self.record)
            if pinned is None:
                continue
            self.steps.append(compose.Step(kernel, reference, pinned))
            kernel, reference = (z3.substitute(t, (var, z3.BitVecVal(value, var.size()))) for t in (kernel, reference))
        equation = compose.simplified(self.hyp, kernel)   # ⊢ h → simplify(kernel) = kernel: simplified once
        simple = equation.conclusion.arg(1).arg(0)
        if not simple.eq(kernel):
            self.steps.append(compose.Step(kernel, reference, equation))
        return simple, reference

    def _rewrite_unions(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        """Each union of the kernel proved equal to one comprehension of the reference becomes a symbol on
        both sides; after each success the unions are looked for again (an outer one may now qualify)."""
        tried: set[tuple[int, int]] = set()
        progress = True
        while progress:
            progress = False
            for union in unions(kernel) + unrolled(kernel):
                for cr in innermost(reference):
                    if cr.decl() != union.decl or (union.term.get_id(), cr.get_id()) in tried:
                        continue
                    tried.add((union.term.get_id(), cr.get_id()))
                    if self._equal(union.parts, cr, inits_apart=union.decl in EXTREMA):
                        symbol = self._symbol(cr)
                        named = union.replaced(kernel, symbol)
                        # undone by s := cr, then ⊢ h → named[s := cr] = kernel from the union's theorem
                        named_cr = z3.substitute(named, (symbol, cr))
                        equation = matched_sums.union_equation(self, union.parts, cr, named_cr, kernel) or \
                            tiled_unions.union_equation(self, union, cr, named_cr, kernel)
                        self.steps.append(compose.Step(kernel, reference, equation, (symbol, cr)))
                        kernel = named
                        reference = z3.substitute(reference, (cr, symbol))
                        progress = True
                        break
                if progress:
                    break
        return kernel, reference

    def _equal(self, kernel_terms: list[z3.ExprRef], cr: z3.ExprRef, inits_apart: bool = False) -> bool:
        self.attempts += 1
        if self.attempts > MAX_ATTEMPTS:
            return False
        ref = open_family(cr, "m!", split=False)
        # a max/min's initial value is found in a folded family by a hint for τ, which one axis allows
        folds, alone = self._folds(kernel_terms, MAX_AXES if ref.kind == "sum" else 1)
        for split in (True, False):
            families = [_family(ck, f"j{n}!", split) for n, ck in enumerate(alone)]
            families += [_family(f.template, f"j{len(alone) + n}!", split, f.outer) for n, f in enumerate(folds)]
            if inits_apart:
                families = [dataclasses.replace(f, init=None) for f in families]
            key = f"{self.key}:reduction{self.count}:{'lanes' if split else 'whole'}"
            if self._union_equal(families, ref, key):
                sources = tuple((ck, None) for ck in alone) + tuple((f.template, f) for f in folds)
                self.matched = dataclasses.replace(self.matched, sources=sources, split=split)
                if not folds:   # each family one kernel term: the pairing can be restated (`matched_sums`)
                    self.matched = dataclasses.replace(self.matched, terms=tuple(alone))
                return True
        return False

    def _folds(self, kernel_terms: list[z3.ExprRef], max_axes: int) -> tuple[list[Fold], list[z3.ExprRef]]:
        """Terms that are one template at the points of a box (the leaves of a tree over threads, a block's
        threads × register lanes), each group proved to be exactly the template's instances, one per point;
        the rest stay terms of their own."""
        folds, alone = fold(kernel_terms, f"{self.key}.fold{self.attempts}.", max_axes)
        proved = []
        for f in folds:
            if f.fills_box() and f.syntactic() and \
                    self._proved(f"{len(f.members)} kernel terms are one term at τ ∈ {f.outer.describe()}",
                                 f.equalities()):
                proved.append(f)
            else:
                alone.extend(f.members)
        return proved, alone

    def _union_equal(self, families: list[Family], ref: Family, key: str) -> bool:
        """The kernel families' elements and the reference's are the same (as a set for max and min; as a
        multiset for sums: a surjective map between equal-sized finite sets is a bijection)."""
        h = ref.lanes[0]
        lanes = [(f, i, lane) for f in families for i, lane in enumerate(f.lanes)]
        psis = [self.reindex(f"{key}:psi{n}", h, ref.var, lane, f.var) for n, (f, _, lane) in enumerate(lanes)]
        phis = []
        for n, (f, _, lane) in enumerate(lanes):
            hint = self._phi_hint(f"{key}:phi{n}", n, f, lane, ref)
            if hint is None:
                return False
            # the hint as the progression it seems to be first: an element of the reference at an affine index
            # is far easier for the solver than at the hint's index expression (which it must relate to the
            # kernel's own); the hint itself when that fails
            candidates = [c for c in (self._progression(f, hint), hint) if c is not None]
            phi = next((c for n_c, c in enumerate(candidates)
                        if not any(z3.eq(c, d) for d in candidates[:n_c]) and
                        self._proved(*self._element(n, f, lane, ref, c))), None)
            if phi is None:
                return False
            phis.append(phi)
            if not self._proved(*self._in_range(n, f, lane, ref, phi)):
                return False
        cover = _progression_cover(self, lanes, phis, ref, exact=ref.kind == "sum")
        folded = any(f.outer for f in families)  # the two covers below know no τ: a folded match needs the first
        if cover is False or (cover is None and (folded or not self._strided_cover(lanes, phis, ref)
                                                 and not self._covered(lanes, phis, psis, families, ref))):
            return False
        if ref.kind == "sum":
            size = sum((_size128(f) * f.count() for f, _, _ in lanes), z3.BitVecVal(0, 128))
            ordered = [z3.ULE(f.lo, f.hi) for f in families] + [z3.ULE(ref.lo, ref.hi)]
            if not self._proved("a kernel reduction has as many terms as the reference's",
                                z3.Not(z3.And(*ordered, size == _size128(ref)))):
                return False
        elif not self._inits_match(families, ref, key):
            return False
        self.matched = matched_sums.Match(families, ref, tuple(phis), tuple(psis))
        self.accepted.update({f"{key}:phi{n}": phi for n, phi in enumerate(phis)})
        self.accepted.update({f"{key}:psi{n}": psi for n, psi in enumerate(psis) if psi is not None})
        return True

    def _phi_hint(self, key: str, n: int, f: Family, lane: z3.ArithRef, ref: Family) -> z3.BitVecRef | None:
        """Lane n's φ: the search's winner among the prover's alternatives, judged by the obligations below
        (on the form the matcher tries first), or else the prover's own proposal."""
        args = (lane, f.var, ref.lanes[0], ref.var)
        if self.search is not None:
            def obligations(hint: z3.BitVecRef) -> list[Obligation]:
                phi = self._progression(f, hint)
                phi = hint if phi is None else phi
                return [self._obligation(*self._element(n, f, lane, ref, phi)),
                        self._obligation(*self._in_range(n, f, lane, ref, phi))]
            won = self.search("reindex", key, args, obligations, self.timeout_s)
            if won:
                return won[0]
        return self.reindex(key, *args)

    @staticmethod
    def _element(n: int, f: Family, lane: z3.ArithRef, ref: Family, phi: z3.BitVecRef) -> tuple[str, z3.BoolRef]:
        """Lane n at j is the reference's element at φ(j) (for max/min it may also be the initial value)."""
        h = ref.lanes[0]
        return (f"term {n} of a kernel reduction equals the reference's element",
                z3.And(_in(f, f.var), lane != z3.substitute(h, (ref.var, phi)), z3.Not(_is_init(lane, ref))))

    @staticmethod
    def _in_range(n: int, f: Family, lane: z3.ArithRef, ref: Family, phi: z3.BitVecRef) -> tuple[str, z3.BoolRef]:
        return (f"term {n} of a kernel reduction stays in the reference's range",
                z3.And(_in(f, f.var), z3.Not(_in(ref, phi)), z3.Not(_is_init(lane, ref))))

    def _covered(self, lanes: list, phis: list, psis: list, families: list[Family], ref: Family) -> bool:
        """Surjectivity in one obligation: each reference element is hit by some kernel term's preimage. For a
        sum the preimage must map back to the same index, φ(ψ(m)) = m — equal values are not enough when the
        reference repeats a value (x[m mod 2] over three terms is not x0 + x1 + x1); for max and min, sets of
        values, they are."""
        h, m = ref.lanes[0], ref.var
        hit = [z3.And(_in(f, psi), z3.substitute(phi, (f.var, psi)) == m if ref.kind == "sum"
                      else z3.substitute(lane, (f.var, psi)) == h)
               for (f, _, lane), phi, psi in zip(lanes, phis, psis, strict=True) if psi is not None]
        hit += [h == f.init for f in families if f.init is not None and ref.kind != "sum"]
        return self._proved("every element of the reference's reduction is a kernel element",
                            z3.And(_in(ref, ref.var), z3.Not(z3.Or(hit) if hit else z3.BoolVal(False))))

    def _strided_cover(self, lanes: list, phis: list, ref: Family) -> bool:
        """Surjectivity for terms that each cover one residue class: φ_n(j) = c_n + S·j with one stride S and
        constant offsets c_n (each form proved). If the c_n mod S are S distinct residues, a reference
        index m belongs to exactly one class, and it is hit when (m - c_n)/S lies in that term's domain
        (one small obligation per term). This avoids one obligation with a disjunction per term."""
        forms = [_affine(phi, f.var) for (f, _, _), phi in zip(lanes, phis, strict=True)]
        strides = {form[1] for form in forms if form is not None}
        if None in forms or len(strides) != 1:
            return False
        (stride,) = strides
        offsets = [self._constant_under_hypothesis(form[0]) for form in forms]
        if stride <= 0 or None in offsets or sorted(c % stride for c in offsets) != list(range(stride)):
            return False
        for n, ((f, _, _), phi, c) in enumerate(zip(lanes, phis, offsets, strict=True)):
            if not self._proved(f"term {n} of a kernel reduction is {c} + {stride}·j",
                                z3.And(_in(f, f.var), phi != c + stride * f.var)):
                return False
            m = ref.var
            j = z3.UDiv(m - c, stride)
            if not self._proved(f"term {n} of a kernel reduction covers its residue class of the reference",
                                z3.And(_in(ref, m), z3.UGE(m, c), z3.URem(m - c, stride) == 0, z3.Not(_in(f, j)))):
                return False
            small = z3.And(_in(ref, m), z3.ULT(m, c), z3.URem(m, stride) == c % stride)
            if not self._proved(f"no element of the reference precedes term {n}'s class", small):
                return False
        return True

    def _progression(self, f: Family, phi: z3.BitVecRef) -> z3.BitVecRef | None:
        """φ as the arithmetic progression start + stride·(j - lo) + Σ slopeₖ·τₖ it seems to be, its numbers
        read off one model of the hypothesis (a guess: the obligations that use it decide), or None."""
        lo = self._constant_under_hypothesis(f.lo)
        numbers = None if lo is None else _progression_numbers(self, f, phi, lo)
        return None if numbers is None else _image(f, numbers[0], numbers[1], lo, numbers[2])

    @cached_property
    def _hypothesis_model(self) -> z3.ModelRef | None:
        return model_of(self.hyp)

    def _constant_under_hypothesis(self, term: z3.BitVecRef) -> int | None:
        """The value `term` takes in one model of the hypothesis: a guess, which the caller proves is forced."""
        if self._hypothesis_model is None:
            return None
        value = self._hypothesis_model.eval(term, model_completion=True)
        return value.as_long() if z3.is_bv_value(value) else None

    def _inits_match(self, families: list[Family], ref: Family, key: str) -> bool:
        """max/min: each side's initial values are elements of the other side."""
        h = ref.lanes[0]
        for n, f in enumerate(families):
            if f.init is None:
                continue
            m0 = self.reindex(f"{key}:init{n}", f.init, None, h, ref.var)
            if m0 is not None:
                self.accepted[f"{key}:init{n}"] = m0
            choices = [f.init == ref.init] if ref.init is not None else []
            if m0 is not None:
                choices.append(z3.And(_in(ref, m0), f.init == z3.substitute(h, (ref.var, m0))))
            if not self._proved("a kernel reduction's initial value is a reference element",
                                z3.Not(z3.Or(choices) if choices else z3.BoolVal(False))):
                return False
        if ref.init is None:
            return True
        choices = [ref.init == f.init for f in families if f.init is not None]
        for n, f in enumerate(families):
            for i, lane in enumerate(f.lanes):
                if f.outer:
                    choices.extend(self._folded_element(f, lane, ref.init, f"{key}:refinit{n}.{i}"))
                elif not _free_var(lane, f.var):  # a lone element: it either is the initial value or not
                    choices.append(z3.And(z3.ULT(f.lo, f.hi), ref.init == lane))
                    continue
                j0 = self.reindex(f"{key}:refinit{n}.{i}", ref.init, None, lane, f.var)
                if j0 is not None:
                    self.accepted[f"{key}:refinit{n}.{i}"] = j0
                    choices.append(z3.And(_in(f, j0), ref.init == z3.substitute(lane, (f.var, j0))))
        return self._proved("the reference's initial value is a kernel element",
                            z3.Not(z3.Or(choices) if choices else z3.BoolVal(False)))

    def _folded_element(self, f: Family, lane: z3.ArithRef, value: z3.ArithRef, key: str) -> list[z3.BoolRef]:
        """How `value` can be an element of a folded family: at a τ (and a j) proposed by the reindexing
        hint; the obligation that uses the choice checks it. (Only one-axis boxes: a hint names one τ.)"""
        if len(f.outer.vars) != 1:
            return []
        tau = self.reindex(f"{key}:tau", value, None, lane, f.outer.vars[0])
        if tau is None:
            return []
        self.accepted[f"{key}:tau"] = tau
        at = (f.outer.vars[0], tau)
        lane_at, lo, hi = (z3.substitute(t, at) for t in (lane, f.lo, f.hi))
        if not _free_var(lane_at, f.var):
            return [z3.And(f.outer.contains([tau]), z3.ULT(lo, hi), value == lane_at)]
        j = self.reindex(f"{key}:j", value, None, lane_at, f.var)
        if j is None:
            return []
        self.accepted[f"{key}:j"] = j
        return [z3.And(f.outer.contains([tau]), z3.ULE(lo, j), z3.ULT(j, hi),
                       value == z3.substitute(lane_at, (f.var, j)))]


def _is_init(lane: z3.ArithRef, ref: Family) -> z3.BoolRef:
    """For max/min a kernel element may be the reference's initial value instead of one of its elements."""
    return lane == ref.init if ref.init is not None and ref.kind != "sum" else z3.BoolVal(False)


def _family(term: z3.ExprRef, var_name: str, split: bool, outer: Outer | None = None) -> Family:
    family = open_family(term, var_name, split) if is_comprehension(term) else _singleton(term, var_name)
    return dataclasses.replace(family, outer=outer)


def _singleton(term: z3.ArithRef, var_name: str) -> Family:
    """A lone element of a max, as a family over the one-point domain [0, 1)."""
    return Family("max", z3.BitVecVal(0, 64), z3.BitVecVal(1, 64), z3.BitVec(var_name, 64), (term,), None)


def _progression_cover(matcher: Matcher, lanes: list, phis: list, ref: Family, exact: bool) -> bool | None:
    """With every bound concrete under the hypothesis (fixed shapes, a fixed storing thread), each kernel
    term's image is an arithmetic progression {a + s·j : lo ≤ j < hi} of the reference's range. Whether
    their union is the whole range (and, for sums, without overlap) is then plain arithmetic on a few numbers
    per term, computed here; each number is an obligation first. None: not applicable; False: refuted."""
    ref_bounds = _concrete_bounds(matcher, ref)
    if ref_bounds is None:
        return None
    progressions = []
    for (f, _, _), phi in zip(lanes, phis, strict=True):
        bounds = _concrete_bounds(matcher, f)
        numbers = None if bounds is None else _progression_numbers(matcher, f, phi, bounds[0])
        if numbers is None:
            return None
        (lo, hi), (start, stride, slopes) = bounds, numbers
        if hi <= lo:
            continue  # an empty term contributes nothing
        image = _image(f, start, stride, lo, slopes)
        moves = "".join(f" + {d}·τ{k}" for k, d in enumerate(slopes))
        if not matcher._proved(f"a kernel term's image is {start} + {stride}·(j - {lo}){moves}",
                               z3.And(_in(f, f.var), phi != image)):
            return None
        # one progression over j per point τ (a block's threads and lanes, never a tensor's elements)
        for point in (f.outer.points() if f.outer else [()]):
            offset = sum(d * u for d, u in zip(slopes, point, strict=True))
            progressions.append((start + offset, stride if hi - lo > 1 else 1, hi - lo))
    # the images were proved modulo 2^64 and the tiling below is integer arithmetic: no progression may wrap
    if any(not (0 <= a < 1 << 64 and 0 <= a + s * (n - 1) < 1 << 64) for a, s, n in progressions):
        return None
    return _tiles(progressions, ref_bounds, exact)


def _progression_numbers(matcher: Matcher, f: Family, phi: z3.BitVecRef, lo: int) -> tuple[int, int, list[int]] | None:
    """(start, stride, slopes): φ at j = lo and τ = 0 under the hypothesis, and its constant steps in j and in
    each τₖ; None when φ does not move by constants or the start is not fixed. Read off, not proved."""
    form = _affine(phi, f.var)
    axes = f.outer.vars if f.outer else ()
    slopes = [_affine(phi, u) for u in axes]
    if form is None or None in slopes:
        return None
    first = [(f.var, z3.BitVecVal(lo, 64))] + [(u, z3.BitVecVal(0, 64)) for u in axes]
    start = matcher._constant_under_hypothesis(z3.simplify(z3.substitute(phi, *first)))
    return None if start is None else (start, form[1], [slope[1] for slope in slopes])


def _image(f: Family, start: int, stride: int, lo: int, slopes: list[int]) -> z3.BitVecRef:
    """start + stride·(j - lo) + Σ slopeₖ·τₖ over the family's variables (modulo 2^64)."""
    axes = f.outer.vars if f.outer else ()
    return start + stride * (f.var - lo) + sum((d * u for d, u in zip(slopes, axes, strict=True)),
                                               z3.BitVecVal(0, 64))


def _concrete_bounds(matcher: Matcher, family: Family) -> tuple[int, int] | None:
    lo, hi = (matcher._constant_under_hypothesis(b) for b in (family.lo, family.hi))
    if lo is None or hi is None:
        return None
    if not matcher._proved(f"a reduction ranges over [{lo}, {hi})", z3.Or(family.lo != lo, family.hi != hi)):
        return None
    return lo, hi
