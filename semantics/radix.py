"""Index divisions by constants as mixed-radix digits of one value: what `semantics.purify` does first.

A thread of a convolution decodes its linear index L into coordinates, L % W, L / W % H, L / (W·H) % C, …;
the reference decodes its output index the same way, at another width or written as another term of equal
value (a 62-bit sum beside a 64-bit one), and the kernel mixes the quotients into its own index arithmetic
(`L + 2·(L / 1022) − 1046528·(L / 1044484)`). Named one by one, each division is a fresh quotient with its own
Euclidean constraint, and the solver must rediscover that L / 1044484 is (L / 1022) / 1022 — uniqueness of
division through multiplier circuits, which it does not finish in minutes. Here every division of one value
by the cut points of one divisibility chain 1 = p₀ | p₁ | … | p_k is written in the digits c₀ … c_k of that
value in the mixed radix (p₁/p₀, …, p_k/p_{k−1}, ∞), and every index term that holds L is read with L
replaced by Σ pᵢ·cᵢ (`semantics.linear`): what the solver then sees is linear, mostly syntactic.

Definitions, on natural numbers (every bit-vector read unsigned; forms and bounds as in `semantics.linear`):

* A digit range [lo, hi) of a base value B (hi a multiple of lo, or ∞) is the term (B / lo) % (hi / lo), or
  B / lo for hi = ∞. B % d is [1, d), B / d is [d, ∞), for a dividend whose natural form is B's; and if T is
  [lo, hi), then T / d is [lo·d, hi) and T % d is [lo, lo·d), provided d divides hi / lo (or hi = ∞), and
  d > 1 for a remainder (T % 1 is 0, no digit range; `exact_divisions` reads it):
  ⌊(⌊B/lo⌋ mod m) / d⌋ = ⌊B/(lo·d)⌋ mod (m/d) and (⌊B/lo⌋ mod m) mod d = ⌊B/lo⌋ mod d, for d | m.

Theorem (exact division). If the dividend t has an exact form f (`semantics.linear`), its quotient and
remainder by d are `Forms.euclid`'s, where it gives them (Euclid's division is unique), in every model of the
formula's symbol bounds.

Theorem (digits). Let B have the bound X, cut points 1 = p₀ | p₁ | … | p_k with X + p_k ≤ 2^W, and digits
c₀ … c_k (W-bit) with cᵢ ≤ p_{i+1}/pᵢ − 1 (i < k), c_k ≤ ⌊X/p_k⌋ and zext(t) = Σ pᵢ·cᵢ at W bits for each
dividend t of B. The sum cannot wrap (Σ_{i<k} pᵢcᵢ ≤ p_k − 1 and p_k·c_k ≤ X), so it is B's value, and the
mixed-radix digits of a natural are unique: cᵢ = ⌊B/pᵢ⌋ mod (p_{i+1}/pᵢ). So the digit range [p_a, p_b)
equals Σ_{a ≤ i < b} (pᵢ/p_a)·cᵢ, which is below 2^w for the width w of the term it replaces (its value is at
most its dividend's). The formula with those replaced and the constraints added is equisatisfiable with the
formula, and a model of it is a model of the formula: the digits are forced by the constraints alone, and
conversely the true digits of B satisfy them in every model of the formula (B ≤ X there).

Theorem (reading L through its digits). Where the constraints hold, B = Σ pᵢ·cᵢ, so a form F that holds B's
natural form k times (every atom of B at k times its coefficient, modulo 2^w for a modular form) equals
F − k·N(B) + k·Σ pᵢ·cᵢ; a term is rebuilt from that form (`semantics.linear.build`) only where it is natural
with a bound below 2^w, or modular. The constraints themselves are never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from semantics import guards
from semantics.linear import Bounds, Form, Forms, build, conjuncts, form, is_arithmetic
from semantics.terms import nodes, raw_arguments, reaching_ids, under_binder, wrap

QUOTIENTS = (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I)
REMAINDERS = (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I)


def _liftable(term: z3.ExprRef) -> bool:
    """A division or remainder by a positive numeral whose dividend holds no bound variable."""
    return z3.is_app(term) and term.decl().kind() in QUOTIENTS + REMAINDERS and z3.is_bv_value(term.arg(1)) \
        and term.arg(1).as_long() > 0 and not under_binder(term.arg(0))


def _liftable_ids(formula: z3.BoolRef) -> set[int]:
    """The ids of the subterms of `formula` that `_liftable` accepts, in a walk for the bound variables' reach
    and one for the divisions: asking `_liftable` of every subterm walks each dividend again (a 3-D window's
    facts: 600,000 such walks, a third of its proof's time)."""
    ref, ctx = formula.ctx_ref(), formula.ctx
    bound = reaching_ids(formula, lambda ast: z3.Z3_get_ast_kind(ref, ast) == z3.Z3_VAR_AST)
    out = set()
    for i, ast in nodes(formula):
        if z3.Z3_get_ast_kind(ref, ast) != z3.Z3_APP_AST or \
                z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, ast)) not in QUOTIENTS + REMAINDERS:
            continue
        (dividend, _), (_, divisor) = raw_arguments(ref, ast)
        d = wrap(divisor, ctx)
        if dividend not in bound and z3.is_bv_value(d) and d.as_long() > 0:
            out.add(i)
    return out


def _divisions(formula: z3.BoolRef, liftable: set[int] | None = None) -> list[z3.BitVecRef]:
    """The subterms `_liftable` accepts (their ids `liftable`, where the caller has them), in the order of
    `subterms`."""
    ids, ctx = _liftable_ids(formula) if liftable is None else liftable, formula.ctx
    return [wrap(ast, ctx) for i, ast in nodes(formula) if i in ids]


def _free_of_divisions(formula: z3.BoolRef, liftable: set[int]) -> list[z3.BoolRef]:
    """The conjuncts of `formula` that hold no subterm `_liftable` accepts (their ids `liftable`)."""
    ref = formula.ctx_ref()
    holding = reaching_ids(formula, lambda ast: z3.Z3_get_ast_id(ref, ast) in liftable)
    return [c for c in conjuncts(formula) if c.get_id() not in holding]


def _is_quotient(term: z3.ExprRef) -> bool:
    return term.decl().kind() in QUOTIENTS


# ---- exact division ------------------------------------------------------------------------------------

def _exact(forms: Forms, division: z3.BitVecRef) -> z3.BitVecRef | None:
    """The exact division theorem's term for `division`, or None: Euclid's quotient or remainder of the
    dividend's exact form f by d (`Forms.euclid`); else, for a coefficient a of f that divides d with
    f = a·Q + R, 0 ≤ R < a (Euclid by a), ⌊f/d⌋ = ⌊Q/(d/a)⌋ and f mod d = R + a·(Q mod (d/a)) (a division of
    the smaller Q by b = d/a: ⌊(a·Q + R)/(a·b)⌋ = ⌊Q/b⌋ for 0 ≤ R < a), taken only where b is a power of two
    (the solver reads that as bits; another b would split a value the digits below read whole)."""
    f = forms.natural(division.arg(0))
    d, w = division.arg(1).as_long(), division.size()
    if f is None:
        return None
    split = forms.euclid(f, d)
    if split is not None:
        return build(split[0] if _is_quotient(division) else split[1], w, forms.atoms)
    powers = {c for _, c in f.atoms if 1 < c < d and d % c == 0 and (d // c) & (d // c - 1) == 0}
    for a in sorted(powers, reverse=True):   # only where d / a is a power of two: the rest is bits
        split = forms.euclid(f, a)
        if split is None:
            continue
        q, r = build(split[0], w, forms.atoms), build(split[1], w, forms.atoms)
        b = z3.BitVecVal(d // a, w)
        return z3.UDiv(q, b) if _is_quotient(division) else r + z3.BitVecVal(a, w) * z3.URem(q, b)
    return None


MAX_ROUNDS = 16   # each round removes a division or lowers a divisor; a bound all the same


def exact_divisions(formula: z3.BoolRef) -> z3.BoolRef:
    """The formula with every division the exact division theorem explains replaced, repeatedly (an outer
    division may become exact once an inner one is replaced). Equivalent to the formula: the bounds it rests
    on are conjuncts about symbols and division-free forms (`Forms.state`), which no replacement touches."""
    for _ in range(MAX_ROUNDS):
        forms = Forms(Bounds(formula))
        liftable = _liftable_ids(formula)
        guards.state(forms, z3.And(_free_of_divisions(formula, liftable)))
        pairs = [(t, r) for t in _divisions(formula, liftable) for r in [_exact(forms, t)] if r is not None]
        if not pairs:
            break
        formula = z3.substitute(formula, *pairs)
    return formula


# ---- digits -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    """A digit range [lo, hi) of a base value (hi None: ∞): the term is (B / lo) % (hi / lo)."""

    base: tuple
    lo: int
    hi: int | None


def _span(forms: Forms, division: z3.BitVecRef, spans: dict[int, Span | None]) -> Span | None:
    """The digit range `division` is (memoised in `spans` by id), or None where the rules do not apply."""
    key = division.get_id()
    if key not in spans:
        spans[key] = None
        spans[key] = _read_span(forms, division, spans)
    return spans[key]


def _read_span(forms: Forms, division: z3.BitVecRef, spans: dict[int, Span | None]) -> Span | None:
    """The digit range the module docstring's rules give: a division of a dividend with a natural form N
    reads [1, ∞) of base N; of a division that is [lo, hi) of B, reads [lo·d, hi) (quotient) or [lo, lo·d)
    (remainder, d > 1) of B, where d divides hi / lo or hi = ∞. Equal to the division for every value of
    the atoms: ⌊(⌊B/lo⌋ mod m)/d⌋ = ⌊B/(lo·d)⌋ mod (m/d) and (⌊B/lo⌋ mod m) mod d = ⌊B/lo⌋ mod d, d | m."""
    d, dividend = division.arg(1).as_long(), division.arg(0)
    if d == 1 and not _is_quotient(division):   # x % 1 = 0: the empty digit range [lo, lo), no digit
        return None
    if _liftable(dividend):
        outer = _span(forms, dividend, spans)
    else:
        f = forms.natural(dividend)
        outer = None if f is None else Span(f.key(), 1, None)
    if outer is None or (outer.hi is not None and (outer.hi // outer.lo) % d):
        return None
    if _is_quotient(division):
        return Span(outer.base, outer.lo * d, outer.hi)
    return Span(outer.base, outer.lo, outer.lo * d)


def _chain(cuts: set[int]) -> list[int] | None:
    """The cut points 1 = p₀ < p₁ < … sorted, when each divides the next; else None."""
    points = sorted(cuts | {1})
    return points if all(b % a == 0 for a, b in zip(points, points[1:], strict=False)) else None


@dataclass(frozen=True)
class Base:
    """A value whose divisions were named by digits: its natural form and Σ pᵢ·cᵢ over the digit symbols."""

    value: Form
    digits: Form
    symbols: tuple[z3.BitVecRef, ...]


def digits(formula: z3.BoolRef, prefix: str = "radix") -> tuple[z3.BoolRef, list[z3.BoolRef], list[Base]]:
    """(the formula with the divisions of each base value replaced by its digits, the digit constraints, the
    bases): with the constraints conjoined, equisatisfiable with the formula, and a model of it is one of the
    formula (the digits theorem). A base whose cut points are no divisibility chain, only powers of two (the
    solver reads those as bits), or whose bound leaves no room keeps its divisions."""
    forms = Forms(Bounds(formula))
    spans: dict[int, Span | None] = {}
    groups: dict[tuple, list[tuple[z3.BitVecRef, Span]]] = {}
    dividends: dict[tuple, dict[int, z3.BitVecRef]] = {}
    for t in _divisions(formula):
        span = _span(forms, t, spans)
        if span is None:
            continue
        groups.setdefault(span.base, []).append((t, span))
        if not _liftable(t.arg(0)):
            dividends.setdefault(span.base, {})[t.arg(0).get_id()] = t.arg(0)
    pairs, facts, bases = [], [], []
    for base, members in groups.items():
        chain = _chain({c for _, s in members for c in (s.lo, s.hi) if c is not None})
        terms = list(dividends.get(base, {}).values())
        if chain is None or not terms or not base[0] or all(p & (p - 1) == 0 for p in chain):
            continue
        width = max(t.size() for t in [*terms, *(m for m, _ in members)])
        bound = min(forms.bounds(t) for t in terms)
        if base[0]:
            bound = min(bound, forms.range(Form(*base))[1])
        if bound + chain[-1] > 1 << width:
            continue
        n = len(bases)
        symbols = tuple(z3.BitVec(f"{prefix}{n}.c{i}", width) for i in range(len(chain)))
        tops = [chain[i + 1] // p - 1 if i + 1 < len(chain) else bound // p for i, p in enumerate(chain)]
        facts += [z3.ULE(c, top) for c, top in zip(symbols, tops, strict=True)]
        total = z3.Sum([c if p == 1 else c * p for c, p in zip(symbols, chain, strict=True)])
        facts += [(z3.ZeroExt(width - t.size(), t) if t.size() < width else t) == total for t in terms]
        for t, span in members:
            lo = chain.index(span.lo)
            hi = len(chain) if span.hi is None else chain.index(span.hi)
            value = z3.Sum([symbols[i] if chain[i] == span.lo else symbols[i] * (chain[i] // span.lo)
                            for i in range(lo, hi)]) if hi > lo + 1 else symbols[lo]
            pairs.append((t, z3.Extract(t.size() - 1, 0, value) if t.size() < width else value))
        value = Form(base[0], base[1])
        bases.append(Base(value, form({c.get_id(): p for c, p in zip(symbols, chain, strict=True)}, 0), symbols))
    if not pairs:
        return formula, [], []
    return z3.substitute(formula, *pairs), [z3.substitute(f, *pairs) for f in facts], bases


# ---- reading L through its digits -------------------------------------------------------------------------

class Rewriter:
    """Index terms rebuilt from their forms, every base value read through its digits, an `If`'s guard in its
    canonical interval form where it has one, and the taken branch rewritten under the bounds it states."""

    def __init__(self, bounds: Bounds, bases: list[Base], atoms: dict[int, z3.BitVecRef],
                 family: dict[tuple, Rewriter] | None = None):
        self.bases = bases
        self.memo: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}   # id -> (term, rewritten), the term held
        self.forms = Forms(bounds, self._atom, self._through_digits)
        self.forms.atoms.update(atoms)
        # the rewriters of one formula by their intervals: a rewriter is a function of its intervals (the bases
        # and atoms are the formula's), and nested tap tests narrow to few intervals along many paths (a 3-D
        # window's 27 guarded taps, each branch re-read from scratch under each enclosing one: 14 s a formula)
        self.family = {} if family is None else family
        self.family.setdefault(_intervals(bounds), self)

    def rewrite(self, term: z3.ExprRef) -> z3.ExprRef:
        """A term equal to `term` wherever the digit constraints hold and the atoms lie in this rewriter's
        intervals (the formula's, narrowed by the guards of the `If` branches it is inside)."""
        key = term.get_id()
        if key not in self.memo:
            self.memo[key] = term, self._rebuilt(term) if is_arithmetic(term) else self._shallow(term)
        return self.memo[key][1]

    def _atom(self, term: z3.ExprRef) -> z3.ExprRef:
        """An atom of a form: the term with its arguments rewritten (an arithmetic node kept as it is)."""
        return self._shallow(term) if is_arithmetic(term) else self.rewrite(term)

    def _shallow(self, term: z3.ExprRef) -> z3.ExprRef:
        """The term with its arguments rewritten (a quantifier kept whole). For If(g, a, b): g' = g rewritten,
        then its canonical form (`guards.canonical`, equivalent where the atoms lie in their intervals); a is
        rewritten under the intervals g' states (`guards.bounds_of`: where a's value matters, g' holds), b
        as it stands. If(g', a', b') = If(g, a, b) wherever the atoms lie in this rewriter's intervals."""
        if not z3.is_app(term) or z3.is_quantifier(term) or term.num_args() == 0:
            return term
        children = term.children()
        if z3.is_app_of(term, z3.Z3_OP_ITE):
            guard = self.rewrite(children[0])
            canonical = guards.canonical(self.forms, guard)
            guard = guard if canonical is None else canonical
            narrowed = guards.bounds_of(self.forms, guard)
            taken = self._under(narrowed) if narrowed else self
            new = [guard, taken.rewrite(children[1]), self.rewrite(children[2])]
        else:
            new = [self.rewrite(c) for c in children]
        return term if all(a.eq(b) for a, b in zip(children, new, strict=True)) else term.decl()(*new)

    def _under(self, narrowed: dict) -> Rewriter:
        """The rewriter of this formula under these intervals narrowed further (one per distinct result)."""
        bounds = self.forms.bounds.under(narrowed)
        key = _intervals(bounds)
        if key not in self.family:
            Rewriter(bounds, self.bases, self.forms.atoms, self.family)
        return self.family[key]

    def _rebuilt(self, term: z3.BitVecRef) -> z3.BitVecRef:
        """`build` of t's modular form M(t) (t ≡ M(t) modulo 2^w, so the built w-bit term equals t), or M(t)'s
        one atom where M(t) is that atom at t's width."""
        f = self.forms.modular(term)
        if not f.constant and len(f.atoms) == 1 and f.atoms[0][1] == 1:
            atom = self.forms.atoms[f.atoms[0][0]]
            if atom.size() == term.size():
                return atom
        return build(f, term.size(), self.forms.atoms)

    def _through_digits(self, f: Form, width: int) -> Form | None:
        """f with each base value it holds k times (modulo 2^w) replaced by its digits: congruent to f modulo
        2^w wherever the digit constraints hold (the last theorem); None when no base is held."""
        modulus = 1 << width
        changed = False
        for base in self.bases:
            odd = next(((a, c) for a, c in base.value.atoms if c % 2), None)
            if odd is None:
                continue
            k = f.coefficient(odd[0]) * pow(odd[1], -1, modulus) % modulus   # the one k modulo 2^w it can be
            if k == 0 or any((f.coefficient(a) - k * c) % modulus for a, c in base.value.atoms):
                continue
            f = f.plus(base.value.scaled(-k)).plus(base.digits.scaled(k))
            changed = True
        return f if changed else None


def _intervals(bounds: Bounds) -> tuple:
    return tuple(sorted(bounds.stated.items()))


def named(formula: z3.BoolRef, prefix: str = "radix") -> z3.BoolRef:
    """`exact_divisions`, then `digits`, then every index term read through the digits: equisatisfiable with
    the formula, and a model of the result is a model of the formula (the theorems above)."""
    formula = exact_divisions(formula)
    replaced, facts, bases = digits(formula, prefix)
    if not bases:
        return formula
    bounds = Bounds(z3.And(replaced, *facts))
    atoms = {c.get_id(): c for base in bases for c in base.symbols}
    rewriter = Rewriter(bounds, bases, atoms)
    return z3.And(rewriter.rewrite(replaced), *facts)


