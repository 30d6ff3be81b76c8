"""Linear forms of index terms: Σ aᵢ·vᵢ + c over atoms vᵢ, exact on the naturals or modulo 2^w.

An index a kernel computes and the index the reference reads are often the same number written two ways: a
62-bit sum shifted left by two and cut back (`Extract(63, 2, 8200 + Concat(s, 0))`) against a 64-bit sum, an
`or` of disjoint bit fields against a `+`, an `int` coordinate sign-extended against a 64-bit one. The solver
settles each such equality by bit-blasting adders and bounds; read as linear forms both are one canonical
term (`build`), and the equality is syntactic.

Definitions (every bit-vector read unsigned; an atom is any term the rules below do not take apart):

* The modular form M(t) of a w-bit term: t ≡ M(t) (mod 2^w) for every value of the atoms. Rules: a numeral;
  +, −, negation, · by numerals and << by a numeral (the ring operations mod 2^w); Extract(h, 0, x) is
  M(x) mod 2^(h+1); Concat(x, 0^k) is M(x)·2^k (mod 2^(w_x+k) = 2^w, as x·2^k); a term with a natural form
  has it (below).
* The natural form N(t): t = N(t) as naturals for every value of the atoms within their bounds (`Bounds`),
  with every coefficient and the constant ≥ 0. Rules: a numeral; +, · by a numeral, << by a numeral, where
  the bound of the result is below 2^w (no wrap-around); zero extension and Concat(0, x) keep N(x);
  Concat(x, 0^k) is N(x)·2^k; sign extension keeps N(x) where x < 2^(w_x − 1) (the sign bit is 0);
  Extract(h, l, x) and x >> l are N(x)/2^l where x < 2^(h+1) (resp. any x) and 2^l divides every coefficient
  and the constant; a − b is N(a) − N(b) where N(b) is a numeral at most N(a)'s constant; a | b is
  N(a) + N(b) where 2^s divides every coefficient and the constant of N(a) and b < 2^s (disjoint bits: the
  or adds them), either way round.
* The bound of a natural form is Σ aᵢ·bound(vᵢ) + c, the bound of an atom its structural bound
  (`semantics.ptx.magic.upper`'s cases) or a top-level conjunct v < n / v ≤ n of the formula for an
  uninterpreted constant v (true in every model of the formula, and kept verbatim by every rewrite here).

`build(form, w)` is the form as a w-bit term: its sum computed modulo 2^w, so it equals a modular form's term
always and a natural form's term wherever the form's value is below 2^w, which N's rules guarantee.
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

    def natural(self) -> bool:
        return self.constant >= 0 and all(c > 0 for _, c in self.atoms)


def form(coefficients: dict[int, int], constant: int, modulus: int | None = None) -> Form:
    if modulus is not None:
        coefficients = {a: c % modulus for a, c in coefficients.items()}
        constant %= modulus
    return Form(tuple(sorted((a, c) for a, c in coefficients.items() if c)), constant)


def numeral(value: int) -> Form:
    return Form((), value)


class Bounds:
    """Upper bounds of terms' values: structural (`magic.upper`'s cases, children through this object), and
    for an uninterpreted constant also a top-level conjunct v < n or v ≤ n of the formula."""

    def __init__(self, formula: z3.BoolRef | None = None):
        self.stated: dict[int, int] = {}
        for c in conjuncts(formula) if formula is not None else ():
            stated = _stated_bound(c)
            if stated is not None:
                v, n = stated
                self.stated[v.get_id()] = min(n, self.stated.get(v.get_id(), n))
        # id -> (the term, its bound): the term is held so that its id cannot be reused by a later term
        self.seen: dict[int, tuple[z3.BitVecRef, int]] = {}

    def __call__(self, term: z3.BitVecRef) -> int:
        key = term.get_id()
        if key not in self.seen:
            self.seen[key] = term, min(magic._upper(term, self), self.stated.get(key, 1 << term.size()))
        return self.seen[key][1]


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


def _stated_bound(conjunct: z3.BoolRef) -> tuple[z3.BitVecRef, int] | None:
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
    return min(((v & -v).bit_length() - 1 for v in values), default=64)


ARITHMETIC = (z3.Z3_OP_BADD, z3.Z3_OP_BSUB, z3.Z3_OP_BNEG, z3.Z3_OP_BMUL, z3.Z3_OP_BSHL, z3.Z3_OP_CONCAT,
              z3.Z3_OP_ZERO_EXT, z3.Z3_OP_SIGN_EXT, z3.Z3_OP_EXTRACT, z3.Z3_OP_BLSHR, z3.Z3_OP_BOR)


def is_arithmetic(term: z3.ExprRef) -> bool:
    return z3.is_bv(term) and z3.is_app(term) and term.decl().kind() in ARITHMETIC


class Forms:
    """The natural and modular forms of terms, memoised by id. `atom(t)` names what the rules do not take
    apart (by default t itself; a rewriter passes its rewritten t)."""

    def __init__(self, bounds: Bounds, atom=None, through=None):
        self.bounds = bounds
        self.atoms: dict[int, z3.BitVecRef] = {}
        self._atom_of = atom or (lambda t: t)
        # through(form, width, natural) -> an equal form (where the caller's facts hold), or None
        self._through = through
        self._natural: dict[int, Form | None] = {}
        self._modular: dict[int, Form] = {}
        self._held: list[z3.ExprRef] = []   # every term read, so that no id in the memos is reused

    def atom(self, term: z3.BitVecRef) -> Form:
        if z3.is_bv_value(term):
            return numeral(term.as_long())
        named = self._atom_of(term)
        if z3.is_bv_value(named):
            return numeral(named.as_long())
        self.atoms[named.get_id()] = named
        return Form(((named.get_id(), 1),), 0)

    def bound(self, f: Form) -> int:
        return sum(c * self.bounds(self.atoms[a]) for a, c in f.atoms) + f.constant

    def natural(self, term: z3.BitVecRef) -> Form | None:
        key = term.get_id()
        if key not in self._natural:
            self._held.append(term)
            found = self._read_natural(term)
            if found is None and is_arithmetic(term):
                found = self._small_modular(term)
            self._natural[key] = found
        return self._natural[key]

    def _small_modular(self, term: z3.BitVecRef) -> Form | None:
        """The term's modular form (read through the caller's `through`) where its bound is below 2^w: then
        t ≡ M (mod 2^w) and 0 ≤ M < 2^w make t = M."""
        modular = self._read_modular(term)
        self._modular[term.get_id()] = modular
        if self._through is not None:
            modular = self._through(modular, term.size(), False) or modular
        return modular if modular.natural() and self.bound(modular) < 1 << term.size() else None

    def modular(self, term: z3.BitVecRef) -> Form:
        key = term.get_id()
        exact = self.natural(term)
        if exact is not None:
            return exact
        if key not in self._modular:
            self._held.append(term)
            self._modular[key] = self._read_modular(term)
        return self._modular[key]

    def _read_natural(self, term: z3.BitVecRef) -> Form | None:
        if z3.is_bv_value(term):
            return numeral(term.as_long())
        if not is_arithmetic(term):
            return self.atom(term)
        w, kind, args = term.size(), term.decl().kind(), term.children()
        found = self._natural_rule(kind, term, args)
        if found is not None and self._through is not None:
            found = self._through(found, w, True) or found
        return found if found is not None and self.bound(found) < 1 << w else None

    def _natural_rule(self, kind: int, term: z3.BitVecRef, args: list) -> Form | None:
        parts = [self.natural(a) for a in args] if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BOR, z3.Z3_OP_BSUB) else []
        if None in parts:
            return None
        if kind == z3.Z3_OP_BADD:
            total = parts[0]
            for p in parts[1:]:
                total = total.plus(p)
            return total
        if kind == z3.Z3_OP_BOR:
            return self._disjoint(parts)
        if kind == z3.Z3_OP_BSUB and len(parts) == 2:
            a, b = parts
            return a.plus(numeral(-b.constant)) if not b.atoms and b.constant <= a.constant else None
        if kind == z3.Z3_OP_BMUL:
            numbers = [a.as_long() for a in args if z3.is_bv_value(a)]
            others = [a for a in args if not z3.is_bv_value(a)]
            if len(others) > 1:
                return None
            inner = self.natural(others[0]) if others else numeral(1)
            k = 1
            for n in numbers:
                k *= n
            return None if inner is None else inner.scaled(k)
        if kind == z3.Z3_OP_BSHL:
            inner = self.natural(args[0])
            return None if inner is None or not z3.is_bv_value(args[1]) else inner.scaled(1 << args[1].as_long())
        if kind == z3.Z3_OP_ZERO_EXT:
            return self.natural(args[0])
        if kind == z3.Z3_OP_SIGN_EXT:
            inner = self.natural(args[0])
            return inner if inner is not None and self.bound(inner) < 1 << (args[0].size() - 1) else None
        if kind == z3.Z3_OP_CONCAT:
            return self._concat(args, True)
        if kind == z3.Z3_OP_EXTRACT:
            hi, lo = term.params()
            inner = self.natural(args[0])
            if inner is None or self.bound(inner) >= 1 << (hi + 1) or not inner.divisible(1 << lo):
                return None
            return inner.scaled(1) if lo == 0 else form({a: c >> lo for a, c in inner.atoms}, inner.constant >> lo)
        if kind == z3.Z3_OP_BLSHR and z3.is_bv_value(args[1]):
            inner, s = self.natural(args[0]), args[1].as_long()
            if inner is None or s >= term.size() or not inner.divisible(1 << s):
                return None
            return form({a: c >> s for a, c in inner.atoms}, inner.constant >> s)
        return None

    def _disjoint(self, parts: list[Form]) -> Form | None:
        """An `or` of two operands whose bits cannot overlap: their sum."""
        if len(parts) != 2:
            return None
        for high, low in (parts, parts[::-1]):
            s = _two_adic(high)
            if s < 64 and self.bound(low) < 1 << s:
                return high.plus(low)
        return None

    def _concat(self, args: list, natural: bool) -> Form | None:
        """Zero high parts, one term, zero low parts: the term times 2^(width of the low zeros). With zero high
        parts the value is the term's exactly, so only its natural form says it; without, its modular form
        scaled is the concatenation's modulo its width."""
        parts = [a for a in args if not (z3.is_bv_value(a) and a.as_long() == 0)]
        if len(parts) != 1:
            return None
        i = next(n for n, a in enumerate(args) if a.eq(parts[0]))
        if not natural and i > 0:
            return None
        inner = self.natural(parts[0]) if natural else self.modular(parts[0])
        shift = sum(a.size() for a in args[i + 1:])
        return None if inner is None else inner.scaled(1 << shift)

    def _read_modular(self, term: z3.BitVecRef) -> Form:
        if not is_arithmetic(term):
            return self.atom(term)
        w, kind, args = term.size(), term.decl().kind(), term.children()
        mod = 1 << w
        if kind == z3.Z3_OP_BADD:
            total = numeral(0)
            for a in args:
                total = total.plus(self.modular(a), mod)
            return total
        if kind == z3.Z3_OP_BSUB and len(args) == 2:
            return self.modular(args[0]).plus(self.modular(args[1]).scaled(-1), mod)
        if kind == z3.Z3_OP_BNEG:
            return self.modular(args[0]).scaled(-1, mod)
        if kind == z3.Z3_OP_BMUL and sum(not z3.is_bv_value(a) for a in args) <= 1:
            k, inner = 1, numeral(1)
            for a in args:
                if z3.is_bv_value(a):
                    k *= a.as_long()
                else:
                    inner = self.modular(a)
            return inner.scaled(k, mod)
        if kind == z3.Z3_OP_BSHL and z3.is_bv_value(args[1]):
            return self.modular(args[0]).scaled(1 << min(args[1].as_long(), w), mod)
        if kind == z3.Z3_OP_EXTRACT and term.params()[1] == 0:
            return self.modular(args[0]).scaled(1, mod)
        if kind == z3.Z3_OP_CONCAT:
            found = self._concat(args, False)
            if found is not None:
                return found.scaled(1, mod)
        return self.atom(term)


def build(f: Form, width: int, atoms: dict[int, z3.BitVecRef]) -> z3.BitVecRef:
    """The form as a `width`-bit term, summed modulo 2^width in the form's atom order: an atom narrower than
    the width is zero-extended, a wider one cut to its low bits (the sum modulo 2^width reads only those)."""
    total = None
    for a, c in f.atoms:
        t = atoms[a]
        grown = z3.ZeroExt(width - t.size(), t) if t.size() < width else \
            z3.Extract(width - 1, 0, t) if t.size() > width else t
        summand = grown if c == 1 else grown * z3.BitVecVal(c, width)
        total = summand if total is None else total + summand
    if total is None:
        return z3.BitVecVal(f.constant, width)
    return total + z3.BitVecVal(f.constant, width) if f.constant else total
