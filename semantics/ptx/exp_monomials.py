"""A tactic: the proof that a term of sums and products over exponentials equals its reading as a sum of
c·exp(a − μ) (`semantics.ptx.exp_terms`).

Each monomial c·exp(u_1)·…·exp(u_n) of the expansion is c·exp(u_1 + … + u_n) by the kernel rule
`semantics.proof.exps.exp_product` (axiom exp.add); `by_smt` does the rest of the algebra. Nothing here is
trusted: `prove_rebased` hands the claimed equation and the rule's instances to `by_smt`, and a wrong expansion
only makes that proof fail. `lark verify` keeps the theorem (a fact of the certificate); `lark check` never
imports this module.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Z3Checker
from semantics.axioms import ideal
from semantics.proof import Refused, Theorem
from semantics.proof.exps import exp_product
from semantics.proof.rules import by_smt, conj, instantiate, mp
from semantics.ptx.exp_terms import TooLarge, coefficient, expand

PROOF_TIMEOUT_S = 10.0


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
