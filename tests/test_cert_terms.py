"""Certificate terms come back as the very terms that were written (AST identity): `lark check` meets goals the
semantics derives again, so a term read back as an equal but different term would lose the proof."""

from __future__ import annotations

import pytest
import z3

from orchestrator.cert_terms import BadTerm, read_terms, term_from_json, term_to_json, write_terms

x, y, z = z3.Reals("x y z")
a, b, c = z3.BitVecs("a b c", 8)
i = z3.Int("i")
k = z3.BitVec("k", 64)
f = z3.Function("f", z3.BitVecSort(64), z3.RealSort())
j = z3.FreshConst(z3.BitVecSort(64), "j")

TERMS = {
    "nested sums keep their grouping": (x + y) + z,
    "an n-ary sum": z3.Sum(x, y, z),
    "an n-ary concat (z3 makes them)": z3.simplify(z3.Concat(z3.Concat(a, ~b), ~c)),
    "negative and fractional numerals": -x + z3.RealVal(-1) / 3 + z3.RealVal("-2/7"),
    "a negative integer": z3.IntVal(-4) + i,
    "a lambda of a fresh index": z3.Lambda([j], f(j) * z3.RealVal("1/64") + 1),
    "quantifiers": z3.ForAll([j, k], z3.Implies(f(j) > f(k), z3.Exists([k], f(k) > -1))),
    "a constant array": z3.K(z3.BitVecSort(64), z3.RealVal(0)),
    "z3's internal division": z3.simplify(z3.UDiv(k, 3) + z3.URem(k, 5)),
    "indexed operators": z3.Extract(3, 0, a) == z3.Extract(7, 4, z3.ZeroExt(4, b)),
    "a symbol that needs quoting": z3.BitVec("tid.x'", 32) + 1,
    "ite, implication, distinct": z3.Implies(z3.Distinct(x, y, z), z3.If(x > y, x, y) == x),
    "an ideal function named like a solver's own": z3.Function("exp", z3.RealSort(), z3.RealSort())(x) > 0,
}


@pytest.mark.parametrize("name", TERMS)
def test_a_term_reads_back_as_itself(name):
    term = TERMS[name]
    declarations, texts = write_terms([term])
    (read,) = read_terms(declarations, texts)
    assert read.eq(term), (texts[0].sexpr, read.sexpr())


def test_terms_of_one_table_share_their_subterms_and_read_back():
    shared = f(j) + x
    terms = [shared * 2, shared == y, z3.Lambda([j], shared)]
    declarations, texts = write_terms(terms)
    assert sum("(+ " in d for d in declarations) == 2   # f(j) + x once, and the one inside the lambda
    assert all(r.eq(t) for r, t in zip(read_terms(declarations, texts), terms, strict=True))


def test_a_hint_round_trips_with_its_own_declarations():
    hint = z3.UDiv(z3.BitVec("e", 64), 393216) * 2
    assert term_from_json(term_to_json(hint)).eq(hint)


def test_a_text_that_does_not_parse_is_a_bad_term():
    declarations, texts = write_terms([x + 1])
    texts[0].sexpr = "(+ x"
    with pytest.raises(BadTerm):
        read_terms(declarations, texts)


def test_a_bound_variable_shadowed_where_it_is_used_is_refused():
    v = z3.BitVec("v", 64)
    inner = z3.Lambda([v], f(v))   # the body below uses the outer v inside an inner binder of the same name
    outer = z3.Lambda([v], z3.Select(z3.Lambda([v], f(v) + z3.Select(inner, v)), v))
    outer_uses_outer = z3.Lambda([v], z3.Select(z3.Lambda([k], f(v) + f(k)), v))
    assert read_terms(*write_terms([outer_uses_outer]))[0].eq(outer_uses_outer)
    shadowing = z3.Lambda([v], z3.Select(z3.Lambda([z3.BitVec("v", 64)], f(z3.Var(1, z3.BitVecSort(64)))), v))
    with pytest.raises(BadTerm, match="shadowed"):
        write_terms([shadowing])
    assert read_terms(*write_terms([outer]))[0].eq(outer)
