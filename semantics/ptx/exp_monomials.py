"""A tactic: a term of sums and products over exponentials, written as a sum of c·exp(a − μ).

Online softmax updates its sum as `s·exp(m − m1) + exp(x − m1)`, nvcc unrolls the update, and the value one
iteration leaves is a nest of such products. Expanding it (distributing products over sums) gives monomials
c·exp(u_1)·…·exp(u_n); each is c·exp(u_1 + … + u_n) by the kernel rule `semantics.proof.exps.exp_product`
(axiom exp.add), and `u_1 + … + u_n` is a − μ for the a this tactic reads off (the simplified sum plus μ).
Nothing here is trusted: `prove_rebased` hands the claimed equation and the rule's instances to `by_smt`, and
a wrong expansion only makes that proof fail.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from lean_pool.checker import Z3Checker
from semantics.axioms import ideal
from semantics.proof import Refused, Theorem
from semantics.proof.exps import exp_product
from semantics.proof.rules import by_smt, conj, instantiate, mp

MAX_MONOMIALS = 64
PROOF_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Monomial:
    factors: tuple[z3.ArithRef, ...]     # their product is the coefficient (1 when empty)
    exponents: tuple[z3.ArithRef, ...]   # exp(u) for each u, multiplied in


class TooLarge(ValueError):
    """The expansion would exceed MAX_MONOMIALS."""


def expand(term: z3.ArithRef) -> list[Monomial]:
    """`term` as a sum of monomials: + and - and unary minus split it, * distributes, exp(u) is a factor of its
    own, a numeral or anything else (a symbol, a max) is an ordinary factor."""
    if z3.is_app_of(term, z3.Z3_OP_ADD):
        return [m for child in term.children() for m in expand(child)]
    if z3.is_app_of(term, z3.Z3_OP_SUB):
        first, *rest = term.children()
        return expand(first) + [m for child in rest for m in _negated(expand(child))]
    if z3.is_app_of(term, z3.Z3_OP_UMINUS):
        return _negated(expand(term.arg(0)))
    if z3.is_app_of(term, z3.Z3_OP_MUL):
        product = [Monomial((), ())]
        for child in term.children():
            product = [Monomial(a.factors + b.factors, a.exponents + b.exponents)
                       for a in product for b in expand(child)]
            if len(product) > MAX_MONOMIALS:
                raise TooLarge(f"more than {MAX_MONOMIALS} monomials")
        return product
    if z3.is_app(term) and term.num_args() == 1 and term.decl() == ideal("exp"):
        return [Monomial((), (term.arg(0),))]
    return [Monomial((term,), ())]


def _negated(monomials: list[Monomial]) -> list[Monomial]:
    return [Monomial((z3.RealVal(-1), *m.factors), m.exponents) for m in monomials]


def coefficient(m: Monomial) -> z3.ArithRef:
    product = z3.RealVal(1)
    for f in m.factors:
        product = product * f
    return z3.simplify(product)


def rebased(term: z3.ArithRef, mu: z3.ArithRef) -> list[tuple[z3.ArithRef, z3.ArithRef]] | None:
    """(c, a) pairs with term = Σ c·exp(a − μ), as this tactic reads them: every monomial holds at least one
    exponential; None when one does not, or the expansion is too large."""
    try:
        monomials = expand(term)
    except TooLarge:
        return None
    if any(not m.exponents for m in monomials):
        return None
    return [(coefficient(m), z3.simplify(z3.Sum(*m.exponents) + mu)) for m in monomials]


def target(pairs: list[tuple[z3.ArithRef, z3.ArithRef]], mu: z3.ArithRef) -> z3.ArithRef:
    """Σ c·exp(a − μ), written as `rebased` reads it."""
    exp = ideal("exp")
    return z3.Sum(*[exp(a - mu) if z3.eq(c, z3.RealVal(1)) else c * exp(a - mu) for c, a in pairs])


ARITHMETIC = (z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_UMINUS, z3.Z3_OP_MUL)


def _atoms(term: z3.ExprRef, found: dict[int, z3.ExprRef]) -> None:
    """The maximal subterms of `term` that are neither arithmetic, numerals nor exp: a load, a max, a symbol."""
    if z3.is_rational_value(term):
        return
    if z3.is_app(term) and (term.decl().kind() in ARITHMETIC
                            or (term.num_args() == 1 and term.decl() == ideal("exp"))):
        for child in term.children():
            _atoms(child, found)
        return
    found.setdefault(term.get_id(), term)


def prove_rebased(term: z3.ArithRef, claimed: z3.ArithRef, name: str) -> Theorem | None:
    """⊢ term = claimed, from the expansion's monomials (each an `exp_product` instance) and `by_smt`; None when
    the solver does not prove it (a wrong reading, or a term of another shape). The proof is of the equation
    with every atom (`_atoms`: loads, maxes, symbols) a fresh symbol, then `instantiate`d back: the identity is
    one of arithmetic and exp alone, and the solver need not look inside a max or at the loads' indices. Where
    that fails (two maxes equal only as maxes: the first iteration from -inf), the equation as it is."""
    found: dict[int, z3.ExprRef] = {}
    _atoms(term, found)
    _atoms(claimed, found)
    atoms = list(found.values())
    fresh = [z3.Const(f"exp_atom!{i}", a.sort()) for i, a in enumerate(atoms)]
    pairs = list(zip(atoms, fresh, strict=True))
    general = (z3.substitute(term, *pairs), z3.substitute(claimed, *pairs)) if pairs else (term, claimed)
    theorem = _prove_general(*general, name)
    if theorem is None:
        return _prove_general(term, claimed, name) if pairs else None
    try:
        for a, f in pairs:
            theorem = instantiate(theorem, f, a)
    except Refused:
        return None
    return theorem


def _prove_general(term: z3.ArithRef, claimed: z3.ArithRef, name: str) -> Theorem | None:
    try:
        monomials = expand(term)
    except TooLarge:
        return None
    instances = [exp_product(coefficient(m), m.exponents) for m in monomials if m.exponents]
    claim = term == claimed
    try:
        if not instances:
            return by_smt(claim, Z3Checker(), PROOF_TIMEOUT_S, name, "equivalence")
        implication = by_smt(z3.Implies(z3.And(*(t.conclusion for t in instances)), claim), Z3Checker(),
                             PROOF_TIMEOUT_S, name, "equivalence")
        return mp(implication, conj(*instances))
    except Refused:
        return None
