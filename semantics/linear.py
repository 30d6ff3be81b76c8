"""Linear forms of index terms: Σ aᵢ·vᵢ + c over atoms vᵢ, exact on the integers or modulo 2^w.

An index a kernel computes and the index the reference reads are often the same number written two ways: a
62-bit sum shifted left by two and cut back (`Extract(63, 2, 8200 + Concat(s, 0))`) against a 64-bit sum, an
`or` of disjoint bit fields against a `+`, an `int` coordinate sign-extended against a 64-bit one. The solver
settles each such equality by bit-blasting adders and bounds; read as linear forms both are one canonical
term (`build`), and the equality is syntactic.

Definitions (a bit-vector's value is unsigned unless said; an atom is any term the rules do not take apart;
coefficients and constants are integers of either sign):

* Each atom v has an interval [lo(v), hi(v)] (`Bounds`): structural (0 and `semantics.ptx.magic.upper`'s
  bound) narrowed, for an uninterpreted constant, by the formula's top-level conjuncts v < n, v ≤ n, and, in
  the branch of an `If(g, a, b)` that g selects, by the bounds g states (`Bounds.under`). A form's range is
  the least and greatest value it takes with every atom in its interval.
* The exact form E(t) of a w-bit term: t's value equals E(t) for every value of the atoms in their intervals
  (so E(t)'s range lies in [0, 2^w)). Rules: a numeral; an atom; +, −, · by a numeral, << by a numeral, of
  exact forms, where the result's range lies in [0, 2^w) (no wrap-around); zero extension keeps E(x);
  Concat(p₁, …, pₙ) is Σ E(pᵢ)·2^(width of the parts after pᵢ); sign extension keeps E(x) where its range
  lies below 2^(w_x−1) (the sign bit is 0); Extract(h, l, x) is ⌊E(x)/2^l⌋ where E(x)'s range lies below
  2^(h+1), and x >> l is ⌊E(x)/2^l⌋, each by `Forms.euclid`; an or of operands is their sum where each next
  operand's bits are disjoint from the operands' so far (one is 0, or one's coefficients and constant are
  multiples of 2^s and the other's range lies in [0, 2^s)); else any integer form congruent to M(t)
  modulo 2^w whose range lies in [0, 2^w) (t ≡ it and both lie in one window of 2^w numbers) — its
  coefficients and constant taken in [0, 2^w) or in [−2^(w−1), 2^(w−1)).
* The modular form M(t): t ≡ M(t) (mod 2^w). Rules: E(t) where there is one; +, −, negation, · by numerals,
  << by a numeral (ring operations mod 2^w); Extract(h, l, x) is M(x)/2^l mod 2^(h−l+1) where 2^l divides M(x)'s
  coefficients and constant (x ≡ 2^l·Y, so its bits l.. are Y's), or ⌊E(x)/2^l⌋ mod 2^(h−l+1); Concat(p₁, …,
  pₙ) is M(p₁)·2^(…) + Σ_{i>1} E(pᵢ)·2^(…) (bits of the top part past its width fall outside);
  SignExt(k, x) is M(x) read with centred coefficients where that form's range lies in
  [−2^(w_x−1), 2^(w_x−1)) (then it is x's signed value).
* Euclid (`Forms.euclid`): f = d·W + R with W the atoms whose coefficients d divides, over d, and R the rest;
  where ⌊lo/d⌋ = ⌊hi/d⌋ = q over R's range [lo, hi], ⌊f/d⌋ = W + q and f mod d = R − d·q.
* Stated forms (`semantics.guards.state`): intervals of forms of several atoms that a formula's top-level
  conjuncts state; `range` narrows a form that holds one k times to k·[its interval] + the rest's range.

`build(form, w)` is the form as a w-bit term, its sum computed modulo 2^w: equal to a modular form's term
always, and to an exact form's term (its value lies in [0, 2^w)).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import z3

from semantics.ptx import magic


@dataclass(frozen=True)
class Form:
    """Σ coefficient·atom + constant; atoms by id (their terms in `Forms.atoms`), sorted, no zero coefficient."""

    atoms: tuple[tuple[int, int], ...]
    constant: int

    def key(self) -> tuple:
        return self.atoms, self.constant

    def coefficient(self, atom: int) -> int:
        return dict(self.atoms).get(atom, 0)

    def scaled(self, k: int, modulus: int | None = None) -> Form:
        return form({a: c * k for a, c in self.atoms}, self.constant * k, modulus)

    def plus(self, other: Form, modulus: int | None = None) -> Form:
        total = dict(self.atoms)
        for a, c in other.atoms:
            total[a] = total.get(a, 0) + c
        return form(total, self.constant + other.constant, modulus)

    def divisible(self, unit: int) -> bool:
        return self.constant % unit == 0 and all(c % unit == 0 for _, c in self.atoms)

    def divided(self, unit: int, modulus: int | None = None) -> Form:
        """The form over `unit` (each coefficient and the constant divisible by it)."""
        return form({a: c // unit for a, c in self.atoms}, self.constant // unit, modulus)

    def centred(self, width: int) -> Form:
        """Coefficients and constant taken in [−2^(w−1), 2^(w−1)) (the same form modulo 2^w)."""
        half, full = 1 << (width - 1), 1 << width

        def c(v: int) -> int:
            v %= full
            return v - full if v >= half else v
        return form({a: c(k) for a, k in self.atoms}, c(self.constant))


def form(coefficients: dict[int, int], constant: int, modulus: int | None = None) -> Form:
    """The form Σ cᵢ·vᵢ + constant, zero coefficients dropped; with `modulus`, every coefficient and the
    constant reduced modulo it (the same form modulo `modulus`)."""
    if modulus is not None:
        coefficients = {a: c % modulus for a, c in coefficients.items()}
        constant %= modulus
    return Form(tuple(sorted((a, c) for a, c in coefficients.items() if c)), constant)


def numeral(value: int) -> Form:
    return Form((), value)


def conjuncts(formula: z3.BoolRef) -> Iterator[z3.BoolRef]:
    """The top-level conjuncts of a formula (nested `And`s flattened)."""
    todo = [formula]
    while todo:
        f = todo.pop()
        if z3.is_and(f):
            todo.extend(reversed(f.children()))
        else:
            yield f


def is_symbol(term: z3.ExprRef) -> bool:
    return z3.is_const(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED


Interval = tuple[int, int]


class Bounds:
    """Intervals of terms' values: [0, structural bound] (`magic.upper`'s cases, children through this object),
    narrowed by stated intervals of atoms (by id): a symbol's from the formula's top-level conjuncts v < n and
    v ≤ n, and whatever `under` adds for a branch."""

    def __init__(self, formula: z3.BoolRef | None = None, stated: dict[int, Interval] | None = None):
        self.stated: dict[int, Interval] = dict(stated or {})
        self.held: list[z3.BitVecRef] = []   # the atoms of `stated`, so that no id there is reused
        for c in conjuncts(formula) if formula is not None else ():
            found = _symbol_bound(c)
            if found is not None:
                v, n = found
                self.narrow(v, (0, n))
        # id -> (the term, its upper bound): the term is held so that its id cannot be reused by a later term
        self.seen: dict[int, tuple[z3.BitVecRef, int]] = {}

    def narrow(self, term: z3.BitVecRef, interval: Interval) -> None:
        lo, hi = self.stated.get(term.get_id(), (0, (1 << term.size()) - 1))
        self.stated[term.get_id()] = (max(lo, interval[0]), min(hi, interval[1]))
        self.held.append(term)

    def under(self, extra: dict[int, tuple[z3.BitVecRef, Interval]]) -> Bounds:
        """These bounds with the atoms' intervals narrowed further (a branch's guard): a new object, since
        every bound read through a narrowed atom may change."""
        inner = Bounds(stated=self.stated)
        inner.held = list(self.held)
        for term, interval in extra.values():
            inner.narrow(term, interval)
        return inner

    def __call__(self, term: z3.BitVecRef) -> int:
        """An upper bound of the term's value."""
        key = term.get_id()
        if key not in self.seen:
            top = self.stated.get(key, (0, 1 << term.size()))[1]
            self.seen[key] = term, min(magic._upper(term, self), top)
        return self.seen[key][1]

    def low(self, term: z3.BitVecRef) -> int:
        """A lower bound of the term's value (0 unless stated)."""
        return self.stated.get(term.get_id(), (0, 0))[0]


def _symbol_bound(conjunct: z3.BoolRef) -> tuple[z3.BitVecRef, int] | None:
    """(v, n') for a conjunct v < n (n' = n − 1) or v ≤ n (n' = n), v an uninterpreted constant."""
    for kind, strict in ((z3.Z3_OP_ULT, True), (z3.Z3_OP_ULEQ, False)):
        if z3.is_app_of(conjunct, kind) and is_symbol(conjunct.arg(0)) and z3.is_bv_value(conjunct.arg(1)):
            n = conjunct.arg(1).as_long()
            if strict and n == 0:
                return None
            return conjunct.arg(0), n - 1 if strict else n
    return None


def _two_adic(f: Form) -> int:
    """The largest s with 2^s dividing every coefficient and the constant (64 for the zero form)."""
    values = [c for _, c in f.atoms] + ([f.constant] if f.constant else [])
    return min(((abs(v) & -abs(v)).bit_length() - 1 for v in values), default=64)


ARITHMETIC = (z3.Z3_OP_BADD, z3.Z3_OP_BSUB, z3.Z3_OP_BNEG, z3.Z3_OP_BMUL, z3.Z3_OP_BSHL, z3.Z3_OP_CONCAT,
              z3.Z3_OP_ZERO_EXT, z3.Z3_OP_SIGN_EXT, z3.Z3_OP_EXTRACT, z3.Z3_OP_BLSHR, z3.Z3_OP_BOR)


def is_arithmetic(term: z3.ExprRef) -> bool:
    return z3.is_bv(term) and z3.is_app(term) and term.decl().kind() in ARITHMETIC


class Forms:
    """The exact and modular forms of terms, memoised by id. `atom(t)` names what the rules do not take apart
    (by default t itself; a rewriter passes its rewritten t); `through(form, width)`, when given, returns a
    form equal to the given one wherever the caller's facts hold (or None)."""

    def __init__(self, bounds: Bounds, atom=None, through=None):
        self.bounds = bounds
        self.atoms: dict[int, z3.BitVecRef] = {}
        self._atom_of = atom or (lambda t: t)
        self._through = through
        self._exact: dict[int, Form | None] = {}
        self._modular: dict[int, Form] = {}
        self._held: list[z3.ExprRef] = []   # every term read, so that no id in the memos is reused
        self.stated: list[tuple[Form, Interval]] = []   # forms of several atoms and their stated intervals

    def atom(self, term: z3.BitVecRef) -> Form:
        if z3.is_bv_value(term):
            return numeral(term.as_long())
        named = self._atom_of(term)
        if z3.is_bv_value(named):
            return numeral(named.as_long())
        self.atoms[named.get_id()] = named
        return Form(((named.get_id(), 1),), 0)

    def range(self, f: Form) -> Interval:
        """The least and greatest value of the form over its atoms' intervals, narrowed where it holds a stated
        form k times (`state`): k·[that form's interval] + the range of the rest."""
        lo, hi = self._range(f)
        for g, (glo, ghi) in self.stated:
            first, coefficient = g.atoms[0]
            k = f.coefficient(first) // coefficient
            if k < 1 or any(f.coefficient(a) != k * c for a, c in g.atoms):
                continue
            rlo, rhi = self._range(f.plus(g.scaled(-k)))
            lo, hi = max(lo, k * glo + rlo), min(hi, k * ghi + rhi)
        return lo, hi

    def _range(self, f: Form) -> Interval:
        lo = hi = f.constant
        for a, c in f.atoms:
            t = self.atoms[a]
            low, high = self.bounds.low(t), self.bounds(t)
            lo += c * (low if c > 0 else high)
            hi += c * (high if c > 0 else low)
        return lo, hi

    def within(self, f: Form, lo: int, hi: int) -> bool:
        """Every value of the form lies in [lo, hi)."""
        low, high = self.range(f)
        return lo <= low and high < hi

    def bound(self, f: Form) -> int:
        return self.range(f)[1]

    def natural(self, term: z3.BitVecRef) -> Form | None:
        """E(t), or None."""
        key = term.get_id()
        if key not in self._exact:
            self._held.append(term)
            self._exact[key] = self._read_exact(term)
        return self._exact[key]

    def modular(self, term: z3.BitVecRef) -> Form:
        """M(t)."""
        exact = self.natural(term)
        return exact if exact is not None else self.modular_reading(term)

    def _read_exact(self, term: z3.BitVecRef) -> Form | None:
        """E(t) by the module docstring's rules: a rule's form (or the caller's equal one, `through`) where its
        range lies in [0, 2^w); else M(t) or M(t) centred where that range lies in [0, 2^w) (t ≡ it, both in
        one window of 2^w integers, so equal); else None."""
        if z3.is_bv_value(term):
            return numeral(term.as_long())
        if not is_arithmetic(term):
            return self.atom(term)
        w = term.size()
        found = self._exact_rule(term.decl().kind(), term, term.children())
        if found is not None and self._through is not None:
            through = self._through(found, w)
            found = through if through is not None and self.within(through, 0, 1 << w) else found
        if found is not None and self.within(found, 0, 1 << w):
            return found
        modular = self.modular_reading(term)
        for candidate in (modular, modular.centred(w)):
            if self.within(candidate, 0, 1 << w):
                return candidate
        return None

    def modular_reading(self, term: z3.BitVecRef) -> Form:
        """M(t) by the modular rules alone (through the caller's facts), memoised as t's modular form."""
        key = term.get_id()
        if key not in self._modular:
            found = self._read_modular(term)
            if self._through is not None:
                found = self._through(found, term.size()) or found
            self._held.append(term)
            self._modular[key] = found.scaled(1, 1 << term.size())
        return self._modular[key]

    def _exact_rule(self, kind: int, term: z3.BitVecRef, args: list) -> Form | None:
        """The integer form the operation computes of its operands' exact forms, before the no-wrap check
        (`_read_exact` keeps it only where its range lies in [0, 2^w)), or None where no rule applies."""
        if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BOR, z3.Z3_OP_BSUB):
            parts = [self.natural(a) for a in args]
            if None in parts:
                return None
            if kind == z3.Z3_OP_BOR:
                return self._disjoint(parts)
            total = parts[0]
            for p in parts[1:]:
                total = total.plus(p if kind == z3.Z3_OP_BADD else p.scaled(-1))
            return total
        if kind == z3.Z3_OP_BMUL:
            others = [a for a in args if not z3.is_bv_value(a)]
            if len(others) > 1:
                return None
            inner = self.natural(others[0]) if others else numeral(1)
            return None if inner is None else inner.scaled(_product(args))
        if kind == z3.Z3_OP_BSHL:   # x << s for s ≥ w is 0, which is x·2^w only where x's range is [0, 0]
            inner = self.natural(args[0])
            if inner is None or not z3.is_bv_value(args[1]):
                return None
            return inner.scaled(1 << min(args[1].as_long(), term.size()))
        if kind == z3.Z3_OP_ZERO_EXT:
            return self.natural(args[0])
        if kind == z3.Z3_OP_SIGN_EXT:
            inner = self.natural(args[0])
            return inner if inner is not None and self.within(inner, 0, 1 << (args[0].size() - 1)) else None
        if kind == z3.Z3_OP_CONCAT:
            return self._concat(args, True)
        if kind == z3.Z3_OP_EXTRACT:
            hi, lo = term.params()
            inner = self.natural(args[0])
            if inner is None or not self.within(inner, 0, 1 << (hi + 1)):
                return None
            return self.floor(inner, 1 << lo)
        if kind == z3.Z3_OP_BLSHR and z3.is_bv_value(args[1]):
            inner, s = self.natural(args[0]), args[1].as_long()
            return None if inner is None or s >= term.size() else self.floor(inner, 1 << s)
        return None

    def floor(self, f: Form, d: int) -> Form | None:
        """⌊f / d⌋ as a form, for an exact form f (`euclid`'s quotient), or None."""
        split = self.euclid(f, d)
        return None if split is None else split[0]

    def euclid(self, f: Form, d: int) -> tuple[Form, Form] | None:
        """(⌊f/d⌋, f mod d) as forms, for an exact form f, or None. f = d·W + R with W the atoms whose
        coefficients d divides, over d, and R the rest; where ⌊lo/d⌋ = ⌊hi/d⌋ = q for R's range [lo, hi],
        R − d·q lies in [0, d), so f = d·(W + q) + (R − d·q) is Euclid's division (its quotient and remainder
        are unique)."""
        whole = {a: c // d for a, c in f.atoms if c % d == 0}
        rest = form({a: c for a, c in f.atoms if c % d}, f.constant)
        lo, hi = self.range(rest)
        if lo // d != hi // d:
            return None
        q = lo // d
        return form(whole, q), rest.plus(numeral(-d * q))

    def _disjoint(self, parts: list[Form]) -> Form | None:
        """An `or` of operands whose bits cannot overlap, folded left: each next operand's bits are disjoint
        from the operands' so far (one is zero, or one is a multiple of 2^s and the other below 2^s), so the
        or is their sum."""
        total = parts[0]
        for part in parts[1:]:
            for high, low in ((total, part), (part, total)):
                s = _two_adic(high)
                if s < 64 and self.within(low, 0, 1 << s) or low.key() == ((), 0):
                    total = high.plus(low)
                    break
            else:
                return None
        return total

    def _concat(self, args: list, exact: bool) -> Form | None:
        """Concat(p₁, …, pₙ) is Σ pᵢ·2^(width of the parts after pᵢ), exactly: with every part's exact form,
        the exact form; with the lower parts' exact forms and the top part's modular form, the modular form
        (the top part's bits past its width fall outside the concatenation's)."""
        total, shift = numeral(0), 0
        for n, part in enumerate(reversed(args)):
            top = n == len(args) - 1
            f = self.natural(part) if exact or not top else self.modular(part)
            if f is None:
                return None
            total = total.plus(f.scaled(1 << shift))
            shift += part.size()
        return total

    def _read_modular(self, term: z3.BitVecRef) -> Form:
        """A form congruent to t modulo 2^w by the module docstring's modular rules; t itself as an atom where
        none applies."""
        if not is_arithmetic(term):
            return self.atom(term)
        w, kind, args = term.size(), term.decl().kind(), term.children()
        mod = 1 << w
        if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB):
            total = self.modular(args[0])
            for a in args[1:]:
                part = self.modular(a)
                total = total.plus(part if kind == z3.Z3_OP_BADD else part.scaled(-1), mod)
            return total.scaled(1, mod)
        if kind == z3.Z3_OP_BNEG:
            return self.modular(args[0]).scaled(-1, mod)
        if kind == z3.Z3_OP_BMUL and sum(not z3.is_bv_value(a) for a in args) <= 1:
            inner = next((self.modular(a) for a in args if not z3.is_bv_value(a)), numeral(1))
            return inner.scaled(_product(args), mod)
        if kind == z3.Z3_OP_BSHL and z3.is_bv_value(args[1]):
            return self.modular(args[0]).scaled(1 << min(args[1].as_long(), w), mod)
        if kind == z3.Z3_OP_EXTRACT:
            lo = term.params()[1]
            inner, exact = self.modular(args[0]), self.natural(args[0])
            if inner.divisible(1 << lo):
                return inner.divided(1 << lo, mod)
            shifted = None if exact is None else self.floor(exact, 1 << lo)   # bits lo.. of x: ⌊x/2^lo⌋
            if shifted is not None:
                return shifted.scaled(1, mod)
        if kind == z3.Z3_OP_SIGN_EXT:
            inner = self.modular(args[0]).centred(args[0].size())
            half = 1 << (args[0].size() - 1)
            if self.within(inner, -half, half):
                return inner.scaled(1, mod)
        if kind == z3.Z3_OP_CONCAT:
            found = self._concat(args, False)
            if found is not None:
                return found.scaled(1, mod)
        return self.atom(term)

def _product(args: list) -> int:
    """The product of the numeral operands, as an integer (the caller reduces it where it reads modulo 2^w)."""
    k = 1
    for a in args:
        if z3.is_bv_value(a):
            k *= a.as_long()
    return k


def build(f: Form, width: int, atoms: dict[int, z3.BitVecRef]) -> z3.BitVecRef:
    """The form as a `width`-bit term, summed modulo 2^width in the form's atom order: an atom narrower than
    the width is zero-extended, a wider one cut to its low bits (the sum modulo 2^width reads only those)."""
    total = None
    for a, c in f.atoms:
        t = atoms[a]
        grown = z3.ZeroExt(width - t.size(), t) if t.size() < width else \
            z3.Extract(width - 1, 0, t) if t.size() > width else t
        summand = grown if c == 1 else grown * z3.BitVecVal(c % (1 << width), width)
        total = summand if total is None else total + summand
    constant = f.constant % (1 << width)
    if total is None:
        return z3.BitVecVal(constant, width)
    return total + z3.BitVecVal(constant, width) if constant else total
