"""Reading a term of sums and products over exponentials as a sum of c·exp(a − μ): how the semantics states
an online sum's step (`semantics.ptx.online_sums`).

Online softmax updates its sum as `s·exp(m − m1) + exp(x − m1)`, nvcc unrolls the update, and the value one
iteration leaves is a nest of such products. Expanding it (distributing products over sums) gives monomials
c·exp(u_1)·…·exp(u_n), and `u_1 + … + u_n` is a − μ for the a read off here (the simplified sum plus μ).
Nothing here is believed: the reading only states the equation the step must satisfy, which a kernel theorem
then has to state (`semantics.ptx.exp_monomials` proves it in `lark verify`; `lark check` finds it among the
certificate's theorems); a wrong reading only makes that equation unproved. It runs in `lark check` too,
where the same equation has to be stated again.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from semantics.axioms import ideal

MAX_MONOMIALS = 64


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
    """(c, a) pairs with term = Σ c·exp(a − μ), as read here: every monomial holds at least one
    exponential; None when one does not, or the expansion is too large."""
    try:
        monomials = expand(term)
    except TooLarge:
        return None
    if any(not m.exponents for m in monomials):
        return None
    return [(coefficient(m), z3.simplify(z3.Sum(*m.exponents) + mu)) for m in monomials]
