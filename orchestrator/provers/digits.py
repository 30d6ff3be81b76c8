"""Heuristic prover: invert a store index built from mixed-radix digits of the thread's linear id.

A 4-D permute (`(b, n, h, d)` to `(b, h, n, d)`, attention's head split) computes the digits of its linear id
L with divisions and remainders by constants, and nvcc writes `x % c` as `x - c·(x / c)`, so the store index
is affine in L and in the quotients: `L + (N·D - D)·h + (D - H·D)·n` with b = L / (N·H·D),
n = (L - N·H·D·b) / (H·D), h = (L - N·H·D·b - H·D·n) / D. Each quotient is a digit of L (place value
`lo`, `size` values): its dividend is L less the digits above it. Writing L itself as its digits
(Σ lo·digit, plus the lowest digit L mod min lo), the index becomes Σ coefficient·digit; with positive
coefficients that is a mixed radix, which `inverse.propose` already decodes: e gives each digit, the digits
give L, and L gives the thread. Untrusted: the checker proves or rejects whatever this proposes.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from semantics.ptx.machine import simplify
from semantics.terms import subterms

DIVISIONS = frozenset({z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BSDIV, z3.Z3_OP_BSDIV_I})
Form = tuple[dict[str, tuple[z3.ExprRef, int]], int]   # Σ coefficient · atom + constant, atoms by name


class _Forms:
    """Affine forms over thread variables and quotient atoms: each division by a constant in a term is named by a
    fresh symbol (`digit!N`), remembered with its dividend's form, and `inverse.linearize` reads what is left."""

    def __init__(self, linearize: Callable[[z3.ExprRef], Form | None], term: z3.ExprRef):
        divisions = [t for t in subterms(term) if z3.is_app(t) and t.decl().kind() in DIVISIONS
                     and z3.is_bv_value(t.arg(1)) and t.arg(1).as_long() > 1]
        pairs = [(t, z3.BitVec(f"digit!{n}", t.size())) for n, t in enumerate(divisions)]
        self.quotients: dict[str, tuple[Form | None, int]] = {
            str(symbol): (linearize(z3.substitute(t.arg(0), *pairs)), t.arg(1).as_long()) for t, symbol in pairs}
        self.form = linearize(z3.substitute(term, *pairs)) if pairs else None


def _split(form: Form, quotients: dict) -> tuple[dict[str, int], dict[str, int], int]:
    """A form's coefficients on plain variables and on quotient atoms, and its constant."""
    plain = {n: c for n, (_, c) in form[0].items() if n not in quotients}
    digits = {n: c for n, (_, c) in form[0].items() if n in quotients}
    return plain, digits, form[1]


def _places(forms: _Forms) -> tuple[dict[str, int], dict[str, int], int] | None:
    """L (plain coefficients), each quotient's place value and L's constant c₀ (an unrolled store's lane
    offset, `(t + 256 + 1024·k) / HW`), when every quotient is a digit of one L: its dividend is L less lo·digit
    for exactly the digits above it (those of place value at least its own)."""
    base, places, offset = None, {}, None
    for name, (dividend, divisor) in sorted(forms.quotients.items(), key=lambda q: len(q[1][0][0])):
        plain, above, const = _split(dividend, forms.quotients)
        if offset is not None and const != offset or (base is not None and plain != base) or \
                any(a not in places or c != -places[a] for a, c in above.items()):
            return None
        base, offset = plain, const
        modulus = min((places[a] for a in above), default=None)
        if modulus is not None and modulus % divisor:
            return None
        places[name] = divisor
    return (base, places, offset) if base else None


def propose(key: str, index: z3.BitVecRef, variables: list[z3.BitVecRef], e: z3.BitVecRef,
            linearize: Callable[[z3.ExprRef], Form | None], invert: Callable) -> dict[str, z3.ExprRef] | None:
    """Terms in e for each variable such that index(vars) == e, through the digits of one linear id
    (`linearize` and `invert` are `inverse`'s: the affine reading and the mixed-radix decoding of L)."""
    forms = _Forms(linearize, index)
    form = forms.form
    if form is None or any(dividend is None for dividend, _ in forms.quotients.values()):
        return None
    found = _places(forms)
    if found is None:
        return None
    base, places, offset = found
    plain, on_digits, const = _split(form, forms.quotients)
    # variables beside L (a loop's iteration k stepping over channels) are digits of their own
    extra = {n: c for n, c in plain.items() if n not in base}
    k = next((c for n, c in plain.items() if n in base), 0) // next(iter(base.values()))
    if any(plain.get(n, 0) != k * c for n, c in base.items()):
        return None
    weights = {n: k * places[n] + on_digits.get(n, 0) for n in places} | {"low": k} | extra
    if any(w <= 0 for w in weights.values()):
        return None
    # index = k·(L + c₀) + Σ digits + extra + lane, lane = const - k·c₀, and L + c₀ is the mixed radix of the digits
    lane, span = const - k * offset, k * min(places.values())
    absorbed = _absorbed(lane, span, [w for n, w in weights.items() if n != "low"])
    rest, linear, decoded = e if absorbed else e - lane, z3.BitVecVal(-offset, 64), {}
    for name, w in sorted(weights.items(), key=lambda item: -item[1]):
        if absorbed and name == "low":
            rest = z3.URem(rest, span)
        value = z3.UDiv(rest, w)
        rest = z3.URem(rest, w)
        if name in extra:
            decoded[name] = value
        else:
            linear = linear + value * (places[name] if name in places else 1)
    terms = {n: t for dividend, _ in forms.quotients.values() for n, (t, _) in dividend[0].items()}
    base_term = sum((_wide(terms[n]) * c for n, c in base.items()), z3.BitVecVal(0, 64))
    found = invert(key, simplify(base_term), variables, simplify(linear))
    if found is None:
        return None
    for v in variables:
        if str(v) in decoded:
            found[str(v)] = simplify(z3.Extract(v.size() - 1, 0, decoded[str(v)]) if v.size() < 64 else decoded[str(v)])
    return found


def _absorbed(lane: int, span: int, upper: list[int]) -> bool:
    """Whether an unrolled store's lane offset (`y[base + (16·k + j)·HW]`, the j-th of 16 stores of a channel
    loop: lane j·HW) falls in the gap between the low digit L mod min lo (weight k, spanning k·min lo) and
    every digit above it (lane 0 too, when there is such a gap). The digits are then decoded from e itself, the
    low one from e mod span, so each unrolled store proposes the same divisions of e (one quotient and remainder
    per divisor in the coverage obligation instead of sixteen), and the writer is exact for the store whose
    lane is e's."""
    return bool(upper) and span < min(upper) and 0 <= lane and lane % span == 0 and all(lane + span <= w for w in upper)


def _wide(term: z3.BitVecRef) -> z3.BitVecRef:
    return z3.SignExt(64 - term.size(), term) if term.size() < 64 else term
