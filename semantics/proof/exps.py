"""The kernel's rule about the exponential: a product of exponentials is the exponential of the sum.

Online softmax (flash attention's inner loop) rescales a running sum by exp(m_old − m_new) each time the
running max grows; that the result is Σ exp(x − m_final) rests on exp(a)·exp(b) = exp(a + b), which the solver
does not know of the uninterpreted `exp` (`semantics.axioms.ideal`). This rule states the instances a proof
needs, each resting on the axiom `exp.add`; the tactic that rewrites the sum (`semantics.ptx.exp_monomials`)
chooses them, and `by_smt` does the rest of the algebra (a ring identity over the instances).
"""

from __future__ import annotations

import z3

from semantics.axioms import ideal
from semantics.proof.theorem import Refused, Theorem, _mint

MAX_FACTORS = 64


def exp_product(coefficient: z3.ArithRef, arguments: tuple[z3.ArithRef, ...]) -> Theorem:
    """⊢ c·exp(a_1)·…·exp(a_n) = c·exp(a_1 + … + a_n), for real terms c and a_1, …, a_n (1 ≤ n ≤ 64), resting
    on the instance itself of axiom `exp.add` (exp(a)·exp(b) = exp(a + b) for all reals a, b; n − 1 uses of
    it, then both sides multiplied by c). `exp` is the ideal function of `semantics.axioms`; the products and
    the sum are built here, left to right, so the statement is exactly what the rule says."""
    if not 1 <= len(arguments) <= MAX_FACTORS:
        raise Refused(f"exp_product: {len(arguments)} factors (1 to {MAX_FACTORS})")
    if not all(z3.is_real(t) for t in (coefficient, *arguments)):
        raise Refused("exp_product: the coefficient and the arguments must be real terms")
    exp = ideal("exp")
    product = coefficient
    for a in arguments:
        product = product * exp(a)
    total = arguments[0]
    for a in arguments[1:]:
        total = total + a
    instance = product == coefficient * exp(total)
    return _mint(instance, "exp_product", axioms=(instance,))
