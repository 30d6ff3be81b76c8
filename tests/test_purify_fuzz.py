"""Differential tests of purify's rewrites (`semantics.linear`, `semantics.guards`, `semantics.radix`,
`semantics.purify`): random bit-vector index terms at widths 32 and 64, in the shapes those rewrites act on
(sums of products by constants, divisions and remainders by constants, powers of two among them, signed ones,
concatenations, extracts, extensions, shifts, or-folds, `If`s on comparisons), each claim checked by z3 for
every value of the free symbols (the negation of the claim unsat) and at extreme values (0, 1, −1, INT_MIN,
INT_MAX, 2^k ± 1). A rewrite that is no equivalence can turn a wrong kernel into `verified`, so any
counterexample here is a soundness bug; the cases found so far are kept as named regression tests below.

Claims checked (the modules' docstrings state them):
* `Forms.modular(t)` built back at t's width equals t; `Forms.natural(t)`, where given, equals t's value as an
  integer (read at 320 bits, no wrap-around) wherever the symbols' stated bounds hold;
* `guards.canonical(g)` is equivalent to g and `guards.bounds_of(g)`'s intervals follow from g, where the
  bounds hold; `guards.state`'s intervals follow from the formula;
* `radix.exact_divisions(F)` is equivalent to F;
* `purify.purified(F)` has a model only where F has (P ∧ ¬F unsat), and every model of F extends to one of
  P by the names' intended values (the true digits, quotients and remainders: F ∧ ¬P[names := values] unsat).

A solver timeout is counted, not taken as a pass: the test fails when more than a fifth of the checks time out.
The examples are derandomized (the same each run); LARK_FUZZ_RANDOM=1 and
LARK_FUZZ_EXAMPLES=N (default 25, CI time) explore further.
"""

from __future__ import annotations

import os

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semantics import guards, linear, purify, radix
from semantics.linear import Bounds, Forms
from semantics.terms import constants

TIMEOUT_MS = 2000
EXAMPLES = int(os.environ.get("LARK_FUZZ_EXAMPLES", "25"))
WIDE = 320   # integer forms are read at this width: no coefficient·atom sum of these terms reaches it

A, B, C = z3.BitVecs("a b c", 16)
BOUNDS = [z3.ULT(A, 37), z3.ULT(B, 1000), z3.ULT(C, 5)]


def _x(w: int) -> z3.BitVecRef:
    """A free symbol of the full width, unbounded: every wrap-around is reachable through it."""
    return z3.BitVec(f"x{w}", w)


def _y(w: int) -> z3.BitVecRef:
    return z3.BitVec(f"y{w}", w)


def _ext(t: z3.BitVecRef, w: int) -> z3.BitVecRef:
    return z3.ZeroExt(w - t.size(), t) if t.size() < w else t


def _base(w: int) -> z3.BitVecRef:
    """One value decoded by a divisibility chain (37 | 370 | 37000 | 185000), as an output index is."""
    return _ext(A, w) + 37 * _ext(B, w) + 37000 * _ext(C, w)


def extremes(w: int) -> list[int]:
    full = 1 << w
    values = {0, 1, full - 1, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1}
    for k in (2, 7, 8, 15, 16, 31, 32, 33, 63):
        if k < w:
            values |= {(1 << k) - 1, 1 << k, (1 << k) + 1}
    return sorted(values)


CHAIN = [37, 370, 37000, 185000]
DIVISORS = CHAIN + [1, 2, 3, 4, 6, 10, 16, 100, 148, 296000, 74000, 1022, 1024, 1044484, 133693952]


def _divisors(w: int) -> st.SearchStrategy[int]:
    return st.sampled_from(DIVISORS + [v for v in extremes(w) if v > 0])


def _multipliers(w: int) -> st.SearchStrategy[int]:
    return st.sampled_from([2, 3, 9, 37, 1000, 4095, 1022, 1044484] + extremes(w))


@st.composite
def leaves(draw, w: int) -> z3.BitVecRef:
    kind = draw(st.integers(0, 7))
    if kind == 6:   # a division of a two-coordinate sum, which a guard may bound (`guards.state`)
        pair = _ext(A, w) + 37 * _ext(B, w)
        d = draw(st.sampled_from([37, 74, 148, 8, 10, 1000]))
        return z3.UDiv(pair, d) if draw(st.booleans()) else z3.URem(pair, d)
    if kind == 7:   # a division of the base value at the other width
        other = 64 if w == 32 else 32
        q = z3.UDiv(_base(other), draw(st.sampled_from(CHAIN + [148, 74000])))
        return z3.Extract(w - 1, 0, q) if other > w else z3.ZeroExt(w - other, q)
    if kind == 0:
        return _ext(draw(st.sampled_from([A, B, C])), w)
    if kind == 1:
        return draw(st.sampled_from([_x(w), _y(w)]))
    if kind == 2:
        return z3.BitVecVal(draw(st.sampled_from(extremes(w))), w)
    if kind == 3:
        return z3.UDiv(_base(w), draw(st.sampled_from(CHAIN)))
    if kind == 4:
        lo, hi = sorted(draw(st.lists(st.sampled_from([1] + CHAIN), min_size=2, max_size=2, unique=True)))
        inner = _base(w) if lo == 1 else z3.UDiv(_base(w), lo)
        return z3.URem(inner, hi // lo) if hi % lo == 0 else z3.URem(inner, 10)
    return z3.URem(_base(w), draw(st.sampled_from(CHAIN)))


@st.composite
def guards_on(draw, x: z3.BitVecRef) -> z3.BoolRef:
    """A test of x (shifted by a constant) against a numeral, in the shapes kernels and references write."""
    w = x.size()
    shifted = x - draw(st.sampled_from([0, 1, 2, 5, 40, (1 << w) - 1, 1 << (w - 1)]))
    n = draw(st.sampled_from([0, 1, 5, 30, 512, 1000, (1 << (w - 1)) - 1, 1 << (w - 1), (1 << w) - 3, (1 << w) - 1]))
    kind = draw(st.integers(0, 9))
    if kind == 0:
        g = z3.ULT(shifted, n)
    elif kind == 1:
        g = z3.ULE(shifted, n)
    elif kind == 2:
        g = z3.ULT(n, shifted)
    elif kind == 3:
        g = z3.ULE(n, shifted)
    elif kind == 4:
        g = shifted < n          # signed
    elif kind == 5:
        g = shifted >= n         # signed
    elif kind == 6:
        low = draw(st.integers(1, w - 1))
        g = z3.Extract(w - 1, low, shifted) == 0
    elif kind == 7:
        low = draw(st.integers(1, w - 1))
        g = (z3.Extract(w - 1, low, shifted) | z3.Extract(w - 1, low, x)) == 0
    elif kind == 8:
        g = z3.And(z3.ULE(n, shifted), z3.ULT(x, n + 7))
    else:
        g = z3.UGE(shifted, n)
    return z3.Not(g) if draw(st.booleans()) else g


@st.composite
def terms(draw, w: int, depth: int = 3) -> z3.BitVecRef:
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(leaves(w))
    x = draw(terms(w, depth - 1))
    kind = draw(st.integers(0, 22))
    if kind in (0, 1):
        return x + draw(terms(w, depth - 1))
    if kind == 2:
        return x - draw(terms(w, depth - 1))
    if kind == 3:
        return -x
    if kind == 4:
        return x * draw(_multipliers(w))
    if kind == 5:
        return z3.UDiv(x, draw(_divisors(w)))
    if kind == 6:
        return z3.URem(x, draw(_divisors(w)))
    if kind == 7:
        d = draw(_divisors(w))
        return z3.SRem(x, d) if draw(st.booleans()) else x / d   # signed
    if kind == 8:
        return x << draw(st.sampled_from([0, 1, 2, 4, w - 1, w, w + 3, (1 << w) - 1]))
    if kind == 9:
        return z3.LShR(x, draw(st.sampled_from([0, 1, 2, 4, w - 1, w, (1 << w) - 1])))
    if kind == 10:
        return x >> draw(st.sampled_from([1, 2, w - 1, w]))   # arithmetic
    if kind == 11:
        h = draw(st.integers(0, w - 1))
        lo = draw(st.integers(0, h))
        return z3.ZeroExt(w - (h - lo + 1), z3.Extract(h, lo, x))
    if kind == 12:
        h = draw(st.integers(0, w - 2))
        return z3.SignExt(w - h - 1, z3.Extract(h, 0, x))
    if kind == 13:
        cut = draw(st.integers(1, w - 1))
        return z3.Concat(z3.Extract(w - cut - 1, 0, x), z3.Extract(cut - 1, 0, draw(terms(w, depth - 1))))
    if kind == 14:
        cut = draw(st.integers(1, w - 1))
        return z3.Concat(z3.BitVecVal(draw(st.sampled_from([0, 1, 3])), cut), z3.Extract(w - cut - 1, 0, x))
    if kind == 15:
        return x | draw(terms(w, depth - 1))
    if kind == 16:
        k = draw(st.integers(1, w - 1))
        return (x << k) | z3.URem(draw(terms(w, depth - 1)), 1 << k)
    if kind == 17:
        k = draw(st.integers(1, w - 1))
        return (x << k) | draw(terms(w, depth - 1))
    if kind == 18:
        return x & draw(st.sampled_from(extremes(w)))
    if kind in (19, 20):
        return z3.If(draw(guards_on(x)), draw(terms(w, depth - 1)), draw(terms(w, depth - 1)))
    if kind == 21:
        narrow = draw(st.sampled_from([8, 16, 32]))
        if narrow >= w:
            return x
        inner = z3.Extract(narrow - 1, 0, x) - draw(st.sampled_from([1, 4, 300]))
        return z3.SignExt(w - narrow, inner) if draw(st.booleans()) else z3.ZeroExt(w - narrow, inner)
    return x ^ draw(terms(w, depth - 1))


# ---- the solver's answers -----------------------------------------------------------------------------------

class Tally:
    """Checks run and checks the solver did not settle within the timeout."""

    def __init__(self):
        self.checks = 0
        self.timeouts = 0


TALLY = Tally()


def valid(claim: z3.BoolRef) -> bool | None:
    """True when ¬claim is unsat, False when sat (a counterexample), None on a timeout (counted)."""
    solver = z3.Solver()
    solver.set("timeout", TIMEOUT_MS)
    solver.add(z3.Not(claim))
    TALLY.checks += 1
    answer = solver.check()
    if answer == z3.unknown:
        TALLY.timeouts += 1
        return None
    return answer == z3.unsat


def _check(claim: z3.BoolRef, what: str) -> None:
    assert valid(claim) is not False, f"{what}: not valid:\n{claim}"


def _wide_value(f: linear.Form, forms: Forms) -> z3.BitVecRef:
    total = z3.BitVecVal(f.constant % (1 << WIDE), WIDE)
    for a, c in f.atoms:
        total = total + z3.BitVecVal(c % (1 << WIDE), WIDE) * _ext(forms.atoms[a], WIDE)
    return total


def check_forms(t: z3.BitVecRef, hypothesis: z3.BoolRef) -> None:
    forms = Forms(Bounds(hypothesis))
    exact = forms.natural(t)
    if exact is not None:
        _check(z3.Implies(hypothesis, _wide_value(exact, forms) == _ext(t, WIDE)), "natural form")
    modular = forms.modular(t)
    _check(z3.Implies(hypothesis, linear.build(modular, t.size(), forms.atoms) == t), "modular form")


def check_guard(g: z3.BoolRef, hypothesis: z3.BoolRef) -> None:
    forms = Forms(Bounds(hypothesis))
    canonical = guards.canonical(forms, g)
    if canonical is not None:
        _check(z3.Implies(hypothesis, canonical == g), "canonical guard")
    for v, (lo, hi) in guards.bounds_of(forms, g).values():
        implied = z3.BoolVal(False) if lo > hi else z3.And(z3.ULE(lo, _ext(v, WIDE)), z3.ULE(_ext(v, WIDE), hi))
        _check(z3.Implies(z3.And(hypothesis, g), implied), "guard's intervals")
    stated = Forms(Bounds(hypothesis))
    guards.state(stated, z3.And(hypothesis, g))
    for f, (lo, hi) in stated.stated:
        value = _wide_value(f, stated)
        _check(z3.Implies(z3.And(hypothesis, g), z3.And(lo <= value, value <= hi)), "stated interval")


def intended_values(purified: z3.BoolRef) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """The values purify's names stand for, read off its constraints: a digit cᵢ of a base with
    zext(t) = Σ pⱼ·cⱼ is ⌊t/pᵢ⌋ mod (pᵢ₊₁/pᵢ) (the last ⌊t/p_k⌋); a named q, r with x = q·d + r are x / d and
    x % d. The terms may hold other names; substituted until none is left."""
    pairs: dict[str, tuple[z3.ExprRef, z3.ExprRef]] = {}
    for c in linear.conjuncts(purified):
        for f in ([c] if not z3.is_and(c) else c.children()):
            if not z3.is_eq(f):
                continue
            left, right = f.arg(0), f.arg(1)
            names = {str(s) for s in constants(right) if "radix" in str(s) and ".c" in str(s)}
            if names and not names & {str(s) for s in constants(left)}:   # (left may hold another base's)
                _digit_values(left, right, pairs)
            elif z3.is_app_of(right, z3.Z3_OP_BADD) and right.num_args() == 2 and \
                    "division.r" in str(right.arg(1)) and z3.is_app_of(right.arg(0), z3.Z3_OP_BMUL):
                q, d, r = right.arg(0).arg(0), right.arg(0).arg(1), right.arg(1)
                pairs[str(q)] = q, z3.UDiv(left, d)
                pairs[str(r)] = r, z3.URem(left, d)
    return list(pairs.values())


def _digit_values(total_of: z3.BitVecRef, total: z3.BitVecRef, pairs: dict) -> None:
    digits, todo = [], [total]
    while todo:
        s = todo.pop()
        if z3.is_app_of(s, z3.Z3_OP_BADD):
            todo += s.children()
        elif z3.is_app_of(s, z3.Z3_OP_BMUL):
            digits.append((s.arg(0), s.arg(1).as_long()))
        elif not z3.is_bv_value(s):
            digits.append((s, 1))
    digits.sort(key=lambda d: d[1])
    for i, (c, p) in enumerate(digits):
        q = z3.UDiv(total_of, p) if p > 1 else total_of
        value = z3.URem(q, digits[i + 1][1] // p) if i + 1 < len(digits) else q
        pairs.setdefault(str(c), (c, value))


def _fully_substituted(term: z3.BoolRef, pairs: list) -> z3.BoolRef:
    for _ in range(8):
        if not pairs:
            return term
        term = z3.substitute(term, *pairs)
    return term


def check_purified(formula: z3.BoolRef) -> None:
    exact = radix.exact_divisions(formula)
    _check(exact == formula, "exact divisions")
    p = purify.purified(formula)
    _check(z3.Implies(p, formula), "a model of the purified formula is one of the formula")
    values = intended_values(p)
    _check(z3.Implies(formula, _fully_substituted(p, values)), "every model of the formula extends")


def check_points(t: z3.BitVecRef, w: int, points: list[dict]) -> None:
    """At pinned values of every symbol, the purified `t == k` holds for k = t's value and not for k + 1."""
    k = z3.BitVec("k", w)
    formula = z3.And(*BOUNDS, z3.ULE(z3.URem(z3.UDiv(_base(w), 37), 10), 9), t == k)
    p = purify.purified(formula)
    for point in points:
        pinned = [(s, z3.BitVecVal(v, s.size())) for s, v in point.items()]
        value = z3.simplify(z3.substitute(t, *pinned))
        in_bounds = z3.is_true(z3.simplify(z3.substitute(z3.And(*BOUNDS), *pinned)))
        for candidate, expected in ((value, in_bounds), (value + 1, False)):
            solver = z3.Solver()
            solver.set("timeout", TIMEOUT_MS)
            solver.add(z3.substitute(p, *pinned, (k, z3.simplify(candidate))))
            TALLY.checks += 1
            answer = solver.check()
            if answer == z3.unknown:
                TALLY.timeouts += 1
                continue
            assert (answer == z3.sat) == expected, f"at {point}: t = {value}, purified says {answer}:\n{t}"


def _points(w: int) -> st.SearchStrategy[list[dict]]:
    x = st.sampled_from(extremes(w))
    point = st.fixed_dictionaries({A: st.sampled_from([0, 1, 36, 37, 0xFFFF]), B: st.sampled_from([0, 1, 999]),
                                   C: st.sampled_from([0, 4, 5]), _x(w): x, _y(w): x})
    return st.lists(point, min_size=1, max_size=3)


def _fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=not os.environ.get("LARK_FUZZ_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@st.composite
def guarded(draw, w: int) -> z3.BoolRef:
    """A guard on a coordinate, a sum of coordinates or any term."""
    x = draw(st.one_of(st.sampled_from([_ext(A, w), _ext(B, w), _ext(A, w) + 37 * _ext(B, w), _x(w)]), terms(w, 1)))
    return draw(guards_on(x))


@pytest.mark.parametrize("w", [32, 64])
@_fuzz(4 * EXAMPLES)
@given(data=st.data())
def test_forms_and_guards(w: int, data):
    """Linear forms of random terms and interval readings of random guards (cheap: no divider reaches z3)."""
    hypothesis = z3.And(*BOUNDS)
    check_forms(data.draw(terms(w)), hypothesis)
    check_guard(data.draw(guarded(w)), hypothesis)


@pytest.mark.parametrize("w", [32, 64])
@_fuzz(EXAMPLES // 5)
@given(data=st.data())
def test_purified_formulas_are_equisatisfiable(w: int, data):
    """`t == k` and `g ∧ t ≠ k` for a random term t and guard g beside divisions of one base value by a
    chain, purified: equisatisfiable for every value of the symbols, and at extreme values."""
    t = data.draw(terms(w))
    k = z3.BitVec("k", w)
    check_purified(z3.And(*BOUNDS, z3.ULE(z3.URem(z3.UDiv(_base(w), 37), 10), 9), t == k))
    check_purified(z3.And(*BOUNDS, data.draw(guarded(w)), z3.ULT(z3.UDiv(_base(w), 370), 1000), t != k))
    check_points(t, w, data.draw(_points(w)))


def test_few_checks_timed_out():
    """Runs after the fuzz tests (file order): the timeouts they counted are a minority of their checks."""
    if TALLY.checks == 0:
        pytest.skip("the fuzz tests did not run in this session")
    print(f"purify fuzz: {TALLY.checks} checks, {TALLY.timeouts} timeouts")
    assert TALLY.timeouts * 5 <= TALLY.checks


# ---- regressions: what the fuzzer found ------------------------------------------------------------------------

def test_a_shift_past_the_width_is_zero_without_building_its_power():
    """x << (2^64 − 1) at 64 bits is 0; the exact rule built 2^(2^64 − 1) on the way (a MemoryError)."""
    t = z3.ZeroExt(48, A) << ((1 << 64) - 1)
    forms = Forms(Bounds(z3.And(*BOUNDS)))
    assert forms.natural(t) == linear.numeral(0)
    assert valid(linear.build(forms.modular(t), 64, forms.atoms) == t)


def test_a_remainder_by_one_of_a_digit_range_is_no_digit():
    """(x / 7) % 1 is 0, the empty digit range [7, 7); `radix.digits` named it by the digit c₁ = ⌊x/7⌋ mod …,
    which made (x / 7) % 1 = 2 ∧ x / 7 = 2 satisfiable (`radix.named` was saved by `exact_divisions`
    reading x % 1 first; `digits` alone was not)."""
    x = z3.BitVec("x", 32)
    formula = z3.And(z3.ULT(x, 100), z3.URem(z3.UDiv(x, 7), 1) == 2, z3.UDiv(x, 7) == 2)
    replaced, facts, _ = radix.digits(formula)
    assert valid(z3.Not(z3.And(replaced, *facts)))
    assert valid(z3.Not(purify.purified(formula)))


# ---- the connectives `purify.opened` pushes negations through, and purifying twice ------------------------------

def test_opened_formulas_are_equisatisfiable():
    """¬(p → q), ¬¬p, ¬(p ∨ q) and ¬∀x. P(x) opened: the result implies the formula (a Skolem constant's value
    is a witness of ¬P), and the formula implies the result for some value of the Skolem constants."""
    x, y = _x(32), _y(32)
    v, u = z3.BitVec("v", 32), z3.BitVec("u", 8)
    body = z3.Or(v + 5 != y, z3.ULT(x, 3))   # ∀v of it says x < 3
    cases = [z3.Not(z3.Implies(z3.ULT(x, 10), z3.ULT(z3.UDiv(y, 3), x))), z3.Not(z3.Not(z3.ULT(y, x))),
             z3.Not(z3.Or(z3.ULT(x, 5), z3.UGT(y, x))), z3.Not(z3.ForAll([v], body)),
             z3.And(z3.ULT(x, 7), z3.Not(z3.Implies(z3.ULT(y, 9), z3.ForAll([v], body)))),
             z3.Not(z3.ForAll([v, u], z3.Or(body, u != z3.Extract(7, 0, y))))]   # two variables of two sorts
    for formula in cases:
        opened = purify.opened(formula)
        skolem = [s for s in constants(opened) if "open!" in str(s)]
        assert valid(z3.Implies(opened, formula))
        assert valid(z3.Implies(formula, z3.Exists(skolem, opened) if skolem else opened))


def test_a_purified_formula_purified_again_gets_new_names():
    """A power-of-two division is left by the first pass (z3 reads it as bits); the second pass names
    nothing new over the first pass's names (a prefix keeps every added name new), and stays equisatisfiable."""
    w = 32
    k = z3.BitVec("k", w)
    t = z3.URem(_base(w), 370) + z3.UDiv(z3.UDiv(_base(w), 37), 4) * 3 + z3.URem(_x(w), 6)
    once = purify.purified(z3.And(*BOUNDS, t == k))
    twice = purify.purified(once)
    names = {str(s) for s in constants(twice)} - {str(s) for s in constants(once)}
    assert all(name.startswith("p1.") for name in names)
    check_purified(once)
