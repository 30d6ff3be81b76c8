"""Ideal functions and the axioms that tie approximate instructions and idioms to them.

Floating-point values are reals (DESIGN §3). Transcendental functions are uninterpreted real functions
in the solver; what we know about them is stated here, once, by name. A certificate lists the axioms it
used, and `AXIOM_TABLE_VERSION` changes whenever any row's meaning changes.

Each ideal function also carries its true mathematical meaning (an mpmath function) so that a solver's
counterexample can be replayed on real numbers before it is reported: a model that only exploits the
freedom of an uninterpreted function is not a witness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import z3

AXIOM_TABLE_VERSION = "2026.11.1"


@dataclass(frozen=True)
class IdealFunction:
    name: str
    decl: z3.FuncDeclRef
    exact: Callable[[mpmath.mpf], mpmath.mpf]


def _unary(name: str, exact: Callable) -> IdealFunction:
    return IdealFunction(name, z3.Function(name, z3.RealSort(), z3.RealSort()), exact)


IDEAL_FUNCTIONS: dict[str, IdealFunction] = {
    f.name: f
    for f in (
        _unary("exp", mpmath.exp),
        _unary("log", mpmath.log),
        _unary("tanh", mpmath.tanh),
        _unary("erf", mpmath.erf),
        _unary("sqrt", mpmath.sqrt),
        _unary("sin", mpmath.sin),
        _unary("cos", mpmath.cos),
    )
}


def ideal(name: str) -> z3.FuncDeclRef:
    """The solver symbol of the ideal function `name` (exp, log, tanh, erf, sqrt, sin, cos)."""
    return IDEAL_FUNCTIONS[name].decl


@dataclass(frozen=True)
class Axiom:
    """A named statement we accept without proof. `statement` is for people; the code that applies it
    cites `name`, and every use is recorded so a certificate can list it."""

    name: str
    statement: str


AXIOMS: dict[str, Axiom] = {
    a.name: a
    for a in (
        Axiom("float.reals", "f16/bf16/f32/f64 values and operations are exact real arithmetic; float casts "
                             "are the identity"),
        Axiom("ex2.approx", "ex2.approx(y) = exp(y * ln 2)"),
        Axiom("ex2.log2e", "ex2(x * c) = exp(x) where c is log2(e) rounded to f32 (0f3FB8AA3B), the "
                           "idiom behind __expf, expf and tl.exp"),
        Axiom("lg2.approx", "lg2.approx(x) = log(x) / ln 2"),
        Axiom("lg2.ln2", "lg2(x) * c = log(x) where c is ln(2) rounded to f32 (0f3F317218)"),
        Axiom("rcp.approx", "rcp(x) = 1 / x"),
        Axiom("rsqrt.approx", "rsqrt(x) = 1 / sqrt(x)"),
        Axiom("sqrt.approx", "sqrt.approx(x) = sqrt(x)"),
        Axiom("div.approx", "div.approx(x, y) and div.full(x, y) = x / y"),
        Axiom("tanh.approx", "tanh.approx(x) = tanh(x)"),
        Axiom("sin.approx", "sin.approx(x) = sin(x)"),
        Axiom("cos.approx", "cos.approx(x) = cos(x)"),
    )
}


# Facts that hold of the true functions, instantiated at every application found in a formula. They are
# theorems about the reals, not approximations, so adding them never makes a wrong kernel pass.
FACTS: dict[str, Callable[[z3.ExprRef, z3.ExprRef], z3.BoolRef]] = {
    "exp": lambda app, x: app > 0,
    "sqrt": lambda app, x: z3.Implies(x >= 0, z3.And(app >= 0, app * app == x)),
    "tanh": lambda app, x: z3.And(app > -1, app < 1),
    "erf": lambda app, x: z3.And(app > -1, app < 1),
}


def ground_facts(formula: z3.ExprRef) -> list[z3.BoolRef]:
    """The FACTS rows for each ideal-function application occurring in `formula`."""
    facts, todo, seen = [], [formula], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.num_args() == 1 and t.decl().name() in FACTS and t.decl() == ideal(t.decl().name()):
            facts.append(FACTS[t.decl().name()](t, t.arg(0)))
        todo.extend(t.children())
    return facts
