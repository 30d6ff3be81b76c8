"""semantics.z3_accessors: z3's pure accessors run unchecked, everything else keeps its error check."""

from __future__ import annotations

import sys

import pytest
import z3

import semantics  # noqa: F401  (the package rebinds the accessors on import)
from semantics.terms import subterms, under_binder
from semantics.z3_accessors import ACCESSORS, _raw, unchecked

CORE = sys.modules["z3.z3core"]


def test_every_listed_accessor_is_rebound_in_z3s_own_modules() -> None:
    assert unchecked == ACCESSORS
    for name in ACCESSORS:
        for module in (z3, sys.modules["z3.z3"]):
            assert not hasattr(getattr(module, name), "__code__"), f"{module.__name__}.{name} is still z3's wrapper"


def test_a_builder_keeps_its_error_check() -> None:
    ctx = z3.main_ctx()
    a, b = z3.BitVec("a", 8), z3.BitVec("b", 16)
    with pytest.raises(z3.Z3Exception):
        z3.Z3_mk_bvadd(ctx.ref(), a.as_ast(), b.as_ast())


def test_a_wrapper_that_converts_its_result_is_not_taken() -> None:
    assert _raw(CORE.Z3_get_symbol_string) is None      # it decodes bytes to str
    assert _raw(CORE.Z3_ast_to_string) is None
    assert _raw(CORE.Z3_mk_bvadd) is not None           # plain, but no accessor: left checked (above)


def test_terms_read_through_the_raw_accessors_are_the_terms_built() -> None:
    x, y = z3.BitVecs("x y", 32)
    f = z3.Function("f", z3.BitVecSort(32), z3.RealSort())
    term = z3.If(x + y > 3, f(x * 2), f(y) + 1)
    names = {str(t) for t in subterms(term)}
    assert {"x + y", "f(x*2)", "f(y) + 1", "2", "3"} <= names
    assert term.arg(1).decl().name() == "f" and term.arg(1).arg(0).arg(1).as_long() == 2
    assert z3.is_bv(term.arg(0).arg(0)) and term.arg(0).arg(0).size() == 32


def test_a_bound_variable_is_found_inside_a_binder_and_nowhere_else() -> None:
    """`terms.under_binder`, read through the raw accessors: a lambda's body holds its variable, and so does the
    lambda (the walk looks inside binders, as `subterms` does); a term with no binder holds none."""
    x, k = z3.BitVec("x", 32), z3.BitVec("k", 32)
    lam = z3.Lambda([k], z3.UDiv(k, 3) + x)
    body = lam.body()
    assert under_binder(body) and under_binder(z3.UDiv(body, 5)) and under_binder(lam)
    assert not under_binder(x * 2 + 1) and not under_binder(z3.UDiv(x, 3))
    assert under_binder(z3.ForAll([k], k + x > 0).body())
