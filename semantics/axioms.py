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

from semantics.terms import subterms, under_binder

AXIOM_TABLE_VERSION = "2026.12.5"


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
class Derived:
    """A libm function defined from the ideal ones (log1p(x) = log(1 + x), ...): what its nvcc sequence
    computes, symbolically and exactly. No new uninterpreted symbol: a kernel calling log1pf and a reference
    computing log(1 + x) meet in the same term."""

    symbolic: Callable[[z3.ExprRef], z3.ExprRef]
    exact: Callable[[mpmath.mpf], mpmath.mpf]


DERIVED: dict[str, Derived] = {
    "log1p": Derived(lambda x: ideal("log")(1 + x), mpmath.log1p),
    "expm1": Derived(lambda x: ideal("exp")(x) - 1, mpmath.expm1),
    "cosh": Derived(lambda x: (ideal("exp")(x) + ideal("exp")(-x)) / 2, mpmath.cosh),
    "sinh": Derived(lambda x: (ideal("exp")(x) - ideal("exp")(-x)) / 2, mpmath.sinh),
}


def meaning(name: str) -> Callable[[z3.ExprRef], z3.ExprRef]:
    """The term a libm function `name` gives its argument: its ideal function, or its definition (DERIVED)."""
    return DERIVED[name].symbolic if name in DERIVED else ideal(name)


def exact(name: str) -> Callable[[mpmath.mpf], mpmath.mpf]:
    """The true value of the libm function `name` (mpmath), for replaying witnesses."""
    return DERIVED[name].exact if name in DERIVED else IDEAL_FUNCTIONS[name].exact


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
        Axiom("float.narrowing", "a conversion to a float format narrower than the reference's (f16, bf16) is "
                                 "the identity on reals; only with --allow-narrowing, each use listed as "
                                 "float.narrowing@line N (the PTX line of the cvt)"),
        Axiom("float.constant", "a kernel float32 literal within 2 ulps of a float32 constant the reference computes "
                                "with is that constant; each instance listed as 'constant 0x... taken as NAME (0x...)'"
                                " (semantics/constants.py); never with --exact-constants"),
        Axiom("exp.add", "exp(a) * exp(b) = exp(a + b) for all reals a, b (a theorem about the true exp; the kernel "
                         "rule semantics.proof.exps.exp_product states each instance a proof uses)"),
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
        # Library idioms (semantics/ptx/idioms.py): the whole sequence nvcc 13.0 (-O3, sm_90) inlines for a
        # libm call equals the ideal function. Each names its template and the fingerprint of its text.
        Axiom("nvcc.expf", "the nvcc 13.0 -O3 sm_90 expf sequence (template EXPF, 12 instructions, "
                           "fingerprint 0c6fd1995949: fma.rn x*0f3BBB989D+0.5, cvt.sat, fma.rm *0f437C0000"
                           "+0f4B400001, add 0fCB40007F, neg, fma.rn x*0f3FB8AA3B, fma.rn x*0f32A57060, 2^n by "
                           "shl.b32 23 of the bits, ex2.approx.ftz, mul) computes exp(x); its final mul may be "
                           "contracted with a following addition into fma.rn"),
        Axiom("nvcc.tanhf", "the nvcc 13.0 -O3 sm_90 tanhf sequence (template TANHF, 17 instructions, "
                            "fingerprint 1e8ada9e07a6: |x| >= 0f3F19999A: copysign(x, 1 - 2/(ex2(|x|*0f4038AA3B)"
                            "+1)) saturated to 1 at 0f41102CB4, else an odd degree-9 polynomial) computes tanh(x)"),
        Axiom("nvcc.logf", "the nvcc 13.0 -O3 sm_90 logf sequence (template LOGF, 28 instructions, "
                           "fingerprint f1c135e4e1c6: subnormal scaling by 2^23, exponent/mantissa split on the "
                           "bits, degree-9 polynomial, + e*0f3F317218; +inf for +inf, -inf for 0) computes log(x)"),
        Axiom("nvcc.erff", "the nvcc 13.0 -O3 sm_90 erff sequence (template ERFF, 25 instructions, "
                           "fingerprint 1c3e8f0cf155: two selp-selected polynomials split at |x| = 0f3F8060FE, "
                           "the outer one through 1 - ex2.approx.ftz and copysign) computes erf(x)"),
        Axiom("nvcc.exp", "the nvcc 13.0 -O3 sm_90 double exp sequence (template EXP_F64, 43 instructions, "
                          "fingerprint 2882760d49c4: round x*log2(e) with 0d4338000000000000, two-part ln 2 "
                          "reduction, degree-11 polynomial, exponent added to the high word; overflow/underflow "
                          "paths for |x| >= 0f4086232B on the high word) computes exp(x)"),
        Axiom("nvcc.tanh", "the nvcc 13.0 -O3 sm_90 double tanh sequence (template TANH_F64, 55 instructions, "
                           "fingerprint 30bd6a5cd9fc: odd polynomial below |x| = 0d3FE4F92224DD2F1A, else "
                           "copysign(x, 1 - 2/(exp(2|x|)+1)) with an ex2/expm1-polynomial exp and a Newton reciprocal, "
                           "saturated to 1 above the high word 1077088193) computes tanh(x)"),
        Axiom("nvcc.log1pf", "the nvcc 13.0 -O3 sm_90 log1pf sequence (template LOG1PF, 31 instructions, "
                             "fingerprint 8a40071a4fc1: "
                             "exponent/mantissa split of 1 + x rounded toward zero, mantissa rescaled, degree-9 "
                             "polynomial, + e*0f3F317218; x*inf+inf off the finite range, -0 for -0) computes "
                             "log1p(x) = log(1 + x)"),
        Axiom("nvcc.expm1f", "the nvcc 13.0 -O3 sm_90 expm1f sequence (template EXPM1F, 29 instructions, "
                             "fingerprint ce5cba02a8e3: "
                             "n = rni(x*log2 e) (0 for |x| < 0f3ED1EB85), two-part ln 2 reduction, degree-5 "
                             "polynomial, 2^n by ex2.approx, saturated to inf above 128 and to -1 below -25) "
                             "computes expm1(x) = exp(x) - 1"),
        Axiom("nvcc.coshf", "the nvcc 13.0 -O3 sm_90 coshf sequence (template COSHF, 18 instructions, "
                            "fingerprint 49324ce8d179: "
                            "e^|x|/4 from one ex2.approx.ftz after an rzi ln 2 reduction, then 2*(e^|x|/4) + "
                            "0.125/(e^|x|/4)) computes cosh(x) = (exp(x) + exp(-x)) / 2"),
        Axiom("nvcc.sinhf", "the nvcc 13.0 -O3 sm_90 sinhf sequence (template SINHF, 27 instructions, "
                            "fingerprint 765b21b76767: for "
                            "|x| >= 1 copysign(x, 2*(e^|x|/4) - 0.125/(e^|x|/4)) as coshf's, else an odd "
                            "degree-7 polynomial) computes sinh(x) = (exp(x) - exp(-x)) / 2"),
        # The libdevice functions Triton 3.9 links (its LLVM, sm_90, flush-to-zero): semantics/ptx/libm.py.
        Axiom("libdevice.expf", "the libdevice __nv_expf sequence as Triton 3.9 compiles it for sm_90 (template "
                                "LIBDEVICE_EXPF, 10 instructions, fingerprint 102c2e0780ea: nvcc.expf's with "
                                ".ftz fma/cvt and the 2^n bits shifted in place) computes exp(x); its final mul may "
                                "be contracted with a following addition into fma.rn"),
        Axiom("libdevice.tanhf", "the libdevice __nv_tanhf sequence as Triton 3.9 compiles it for sm_90 (template "
                                 "LIBDEVICE_TANHF, 18 instructions, fingerprint ac68edc4c7b9: nvcc.tanhf's with .ftz "
                                 "arithmetic and x's sign bit or-ed in by and.b32/or.b32) computes tanh(x)"),
        Axiom("libdevice.erff", "the libdevice __nv_erff sequence as Triton 3.9 compiles it for sm_90 (template "
                                "LIBDEVICE_ERFF, 32 instructions, fingerprint 73b1486b420e: nvcc.erff's polynomials "
                                "chosen by a branch at |x| = 0f3F8060FE, .ftz arithmetic, x's sign bit or-ed in by "
                                "and.b32/or.b32) computes erf(x)"),
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
    """The FACTS rows for each ideal-function application occurring in `formula`, but for those that speak of a
    variable bound around them (exp of a Sum body at its index j): a fact about an unbound variable is no
    formula at all (the solver refuses it)."""
    return [FACTS[t.decl().name()](t, t.arg(0)) for t in subterms(formula)
            if z3.is_app(t) and t.num_args() == 1 and t.decl().name() in FACTS and t.decl() == ideal(t.decl().name())
            and not under_binder(t.arg(0))]
