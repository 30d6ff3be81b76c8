"""The kernel's rule about index arithmetic: a division by a constant equals the quotient (or remainder) of a
proved split of its dividend.

A reference reads its inputs at `e / N` and `e % N`; the kernel computed e as `N·c + r`. The solver proves
`(N·c + r) / N = c` only by bit-blasting a 64-bit divider, so the division tactic
(`semantics.properties.divisions`) proposes the split and this rule turns it into an equation.
"""

from __future__ import annotations

import z3

from semantics.proof.theorem import Refused, Theorem, _mint, rule

QUOTIENTS = (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I)
REMAINDERS = (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I)
MAX_WIDTH = 64


def defines(dividend: z3.BitVecRef, divisor: int, quotient: z3.BitVecRef, remainder: z3.BitVecRef) -> z3.BoolRef:
    """dividend = quotient·divisor + remainder and remainder < divisor, on exact integers (each term zero-extended
    by 64 bits: for widths w ≤ 64 no product of two w-bit numbers plus a third wraps): true of exactly one pair,
    the quotient and the remainder."""
    wide = z3.ZeroExt(64, quotient) * divisor + z3.ZeroExt(64, remainder)
    return z3.And(z3.ZeroExt(64, dividend) == wide, z3.ULT(remainder, divisor))


@rule
def divide_by_constant(division: z3.BitVecRef, quotient: z3.BitVecRef, remainder: z3.BitVecRef,
                       split: Theorem) -> Theorem:
    """From Γ ⊢ h → defines(d, N, q, r) conclude Γ ⊢ h → q = d / N (for division = d / N, unsigned) or
    Γ ⊢ h → r = d % N (for division = d % N), with N a positive numeral and d, q, r bit-vectors of one width
    w ≤ 64; without h (a split proved outright), the equation outright. defines(d, N, q, r) is
    d = q·N + r ∧ r < N on (w+64)-bit integers (`defines`), checked structurally against the premise.

    Proof: q, r, N < 2^w, so q·N + r < 2^(2w) ≤ 2^(w+64) does not wrap, and d = q·N + r, 0 ≤ r < N holds of the
    integers; by the uniqueness of Euclidean division q = ⌊d/N⌋ and r = d mod N, which the unsigned w-bit
    division and remainder compute for N ≠ 0 (the `_I` forms are the same operations, the divisor known
    nonzero). (Without the bound r < N the split is not unique: d = 0·N + d.)"""
    if not (z3.is_app(division) and division.decl().kind() in QUOTIENTS + REMAINDERS):
        raise Refused(f"divide_by_constant: {division} is not an unsigned division or remainder")
    dividend, divisor = division.children()
    if not (z3.is_bv_value(divisor) and divisor.as_long() > 0):
        raise Refused(f"divide_by_constant: the divisor {divisor} is not a positive numeral")
    width = dividend.size()
    if width > MAX_WIDTH or any(not (z3.is_bv(t) and t.size() == width) for t in (quotient, remainder)):
        raise Refused(f"divide_by_constant: {quotient} and {remainder} must be {width}-bit, at most {MAX_WIDTH}")
    claim = defines(dividend, divisor.as_long(), quotient, remainder)
    c = split.conclusion
    conditional = z3.is_implies(c) and c.arg(1).eq(claim)
    if not (conditional or c.eq(claim)):
        raise Refused(f"divide_by_constant: {c} is not the split defines({dividend}, {divisor}, {quotient}, "
                      f"{remainder})")
    part = quotient if division.decl().kind() in QUOTIENTS else remainder
    equation = part == division
    return _mint(z3.Implies(c.arg(0), equation) if conditional else equation, "divide_by_constant", (split,))


def multiple(x: z3.BitVecRef, size: int, width: int) -> z3.BitVecRef:
    """x·N at `width` bits, x zero-extended first."""
    return z3.ZeroExt(width - x.size(), x) * size


@rule
def ordered_multiples(x: z3.BitVecRef, y: z3.BitVecRef, size: int, width: int) -> Theorem:
    """⊢ x < y → x·N + N ≤ y·N (unsigned, the products `multiple(·, N, width)`), for x, y bit-vectors of one
    width n ≤ width, N a positive integer and 2^n·N < 2^width.

    Proof: as naturals x < y ≤ 2^n − 1, so x·N + N = (x + 1)·N ≤ y·N ≤ (2^n − 1)·N < 2^width: no product or sum
    wraps at `width` bits, and (x + 1)·N ≤ y·N holds of the naturals (N ≥ 0, x + 1 ≤ y). The solver proves
    this only by bit-blasting two multipliers and comparing them, which takes minutes from n = 15 on (a row
    per block: the start of block b's row is b·N)."""
    if not (z3.is_bv(x) and z3.is_bv(y) and x.size() == y.size() <= width):
        raise Refused(f"ordered_multiples: {x} and {y} must be bit-vectors of one width, at most {width}")
    if not (isinstance(size, int) and size > 0 and (size << x.size()) < (1 << width)):
        raise Refused(f"ordered_multiples: {size} must be a positive integer with {size}·2^{x.size()} < 2^{width}")
    claim = z3.Implies(z3.ULT(x, y), z3.ULE(multiple(x, size, width) + size, multiple(y, size, width)))
    return _mint(claim, "ordered_multiples")
