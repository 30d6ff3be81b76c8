"""nvcc's division by a constant, read back as the division it computes.

nvcc divides an unsigned index by a constant d with a multiply by a "magic" reciprocal M and shifts
(Granlund–Montgomery): `mul.hi.u64 t, x, M; shr.u64 q, t, s`, or, where M needs 65 bits, the add form
`mul.hi t, x, M'; sub u, x, t; shr u, u, 1; add u, u, t; shr q, u, s - 1`. As a term that is a 128-bit
product, which the solver bit-blasts into a multiplier in every query that reads the index (tens of seconds
per access of a convolution); written as `x / d` it is a divider of the width, which it handles, and which
the division tactics (`semantics.properties.divisions`, the digit provers) read.

The executor builds each register's exact term; `rewrite` replaces a term by `x / d` only when the theorem
below makes them equal for every value the dividend can take. Everything is on non-negative integers.

* Floor forms. `floor_form(t) = (x, M, n)` states t = ⌊x·M / 2^n⌋ exactly (no wrap-around):
  - mul.hi: `Extract(2w-1, w, zext(x) · zext(M))` is ⌊x·M / 2^w⌋, M a constant below 2^w;
  - shift: `t >> c` of a floor form (x, M, n) is (x, M, n + c), since ⌊⌊a/b⌋/c⌋ = ⌊a/(b·c)⌋;
  - add form: with t = ⌊x·M'/2^w⌋ (so t ≤ x, as M' < 2^w, and x − t does not wrap),
    `((x − t) >> 1) + t` = ⌊(x − t)/2⌋ + t = ⌊(x + t)/2⌋ ≤ x (no wrap) = ⌊(x·2^w + x·M')/2^(w+1)⌋, the floor
    form (x, 2^w + M', w + 1).
* Theorem (magic division). If 0 ≤ x ≤ X, d ≥ 1, M·d = 2^n + e with 0 ≤ e and X·e < 2^n, then
  ⌊x·M / 2^n⌋ = ⌊x/d⌋. Proof: write x = q·d + r with 0 ≤ r < d. Then x·M/2^n = x/d + x·e/(d·2^n)
  = q + (r + x·e/2^n)/d, and 0 ≤ x·e/2^n ≤ X·e/2^n < 1, so 0 ≤ r + x·e/2^n < r + 1 ≤ d: the floor is q.
* Wide product: `zext(x) · c` (mul.wide.u, or a 64-bit mul of a zero-extended 32-bit value) with
  (2^(w-k) − 1)·c < 2^w, x of w − k bits, is x·c exactly, the floor form (zext(x), c, 0); a shift of it
  then makes `mul.wide.u32 t, x, M; shr.u64 q, t, s` the floor form (zext(x), M, s).
* Signed division (nvcc's `x / d` on a signed int): `h = mul.hi.s x, M` (0 < M < 2^(w-1)), then
  `(h >>ₐ c) + (h >>ₗ (w-1))` (the arithmetic shift absent when c = 0). Theorem: with n = w + c,
  d = ⌈2^n/M⌉, e = M·d − 2^n and 2^(w-1)·e ≤ 2^n, that is trunc(x/d) for every w-bit signed x, written
  `If(x <ₛ 0, −((−x) / d), x / d)` (the definition of trunc through the unsigned division). Proof: h >>ₐ c
  is ⌊x·M/2^n⌋ (floor, x·M/2^w rounded down and shifted arithmetically) and h >>ₗ (w-1) is h's sign,
  1 exactly when x < 0 (x·M < 0 then, and ≥ 0 otherwise). For x ≥ 0 the floor is ⌊x/d⌋ by the magic
  division theorem (X = 2^(w-1) − 1, X·e < 2^n). For x = −y < 0, y = q·d + r (0 ≤ r < d, y ≤ 2^(w-1)):
  y·M/2^n = q + (r + y·e/2^n)/d with 0 < y·e/2^n ≤ 1 (e ≥ 1; e = 0 makes d a power of two, no magic), so
  0 < r + y·e/2^n ≤ d and ⌈y·M/2^n⌉ = q + 1; then ⌊x·M/2^n⌋ = −q − 1 and the sum is −q = trunc(x/d).
* X comes from `upper`, an interval bound read off the term's structure (constants, zero extensions,
  shifts, divisions, remainders, masks, sums and products that cannot wrap).
* Cleared low bits: `(t << a) & c` with c the ones of bits k..h, k ≥ a, t·2^a < 2^(h+1) is (t >> (k-a))·2^k;
  where h is the top bit of the width, for every t, both sides modulo 2^w (bit i ≥ k of each is bit i − a of t).
* Low half: `Extract(v-1, 0, T)` of a floor form (zext(x), M, n) with x of v bits and T < 2^v is ⌊x·M/2^n⌋
  (the same integer, which fits), the floor form (x, M, n) (a `cvt.u32.u64` of a mul.wide's shifted product).
* Nested divisions: ⌊⌊x/a⌋/b⌋ = ⌊x/(a·b)⌋, so `(x >> p) / d` and `(x / d) >> c` become one division when
  the combined divisor fits the width (the rewrite only merges what it built, keeping terms short).

`tests/test_magic_division.py` checks the theorem exhaustively at 8 bits and each rewrite with the solver.
"""

from __future__ import annotations

import z3

FloorForm = tuple[z3.BitVecRef, int, int]   # (x, M, n): the term is ⌊x·M / 2^n⌋


def _value(term: z3.ExprRef) -> int | None:
    """The term's constant value, if it is a constant (possibly a zero extension of one)."""
    folded = z3.simplify(term)
    return folded.as_long() if z3.is_bv_value(folded) else None


def _high_half(term: z3.ExprRef, extension: int, fits) -> tuple[z3.BitVecRef, int, int] | None:
    """(x, c, w) where the term is `Extract(2w-1, w, ext(x) · c)`, ext an extension of kind `extension` from x's
    width w and c a constant with fits(c, w): the high half of a mul.hi's double-width product."""
    if not z3.is_app_of(term, z3.Z3_OP_EXTRACT):
        return None
    hi, lo = term.params()
    product = term.arg(0)
    w = product.size() // 2
    if hi != 2 * w - 1 or lo != w or not z3.is_app_of(product, z3.Z3_OP_BMUL) or product.num_args() != 2:
        return None
    for a, b in ((product.arg(0), product.arg(1)), (product.arg(1), product.arg(0))):
        m = _value(b)
        if z3.is_app_of(a, extension) and a.arg(0).size() == w and m is not None and fits(m, w):
            return a.arg(0), m, w
    return None


def _mul_hi(term: z3.ExprRef) -> FloorForm | None:
    """`Extract(2w-1, w, zext(x) · c)` with c a constant below 2^w: ⌊x·c / 2^w⌋."""
    return _high_half(term, z3.Z3_OP_ZERO_EXT, lambda m, w: m < 1 << w)


def _wide(term: z3.ExprRef) -> FloorForm | None:
    """`zext(x) · c` with c a constant small enough that the product cannot wrap: x·c exactly (n = 0)."""
    if not z3.is_app_of(term, z3.Z3_OP_BMUL) or term.num_args() != 2:
        return None
    w = term.size()
    for a, b in ((term.arg(0), term.arg(1)), (term.arg(1), term.arg(0))):
        m = _value(b)
        if z3.is_app_of(a, z3.Z3_OP_ZERO_EXT) and m is not None and m > 0 and \
                ((1 << a.arg(0).size()) - 1) * m < 1 << w:
            return a, m, 0
    return None


def _shift_amount(term: z3.ExprRef, kind: int = z3.Z3_OP_BLSHR) -> tuple[z3.BitVecRef, int] | None:
    """(y, c) where the term is the shift y >> c (logical, or of `kind`) by a constant c below the width."""
    if z3.is_app_of(term, kind):
        c = _value(term.arg(1))
        if c is not None and c < term.size():
            return term.arg(0), c
    return None


def _add_form(term: z3.ExprRef) -> FloorForm | None:
    """`((x − t) >> 1) + t` (either order) with t = ⌊x·M'/2^w⌋: the floor form (x, 2^w + M', w + 1)."""
    if not z3.is_app_of(term, z3.Z3_OP_BADD) or term.num_args() != 2:
        return None
    for half, t in ((term.arg(0), term.arg(1)), (term.arg(1), term.arg(0))):
        hi = floor_form(t)
        shifted = _shift_amount(half)
        if hi is None or shifted is None or shifted[1] != 1 or hi[2] != t.size() or hi[1] >= 1 << t.size():
            continue
        difference = shifted[0]
        x, m, w = hi
        if z3.is_app_of(difference, z3.Z3_OP_BSUB) and difference.num_args() == 2 and \
                difference.arg(0).eq(x) and difference.arg(1).eq(t):
            return x, (1 << w) + m, w + 1
    return None


# Divisions `rewrite` built, by id, with the floor form each equals (the term is kept, so its id is not reused):
# nvcc's add form may use a mul.hi that is itself a division already (x / 511 inside x / 130816).
_BUILT: dict[int, tuple[z3.ExprRef, FloorForm]] = {}


def floor_form(term: z3.ExprRef) -> FloorForm | None:
    """(x, M, n) with term = ⌊x·M / 2^n⌋ exactly, for the three shapes in the module docstring and the
    divisions `rewrite` built from one."""
    built = _BUILT.get(term.get_id())
    if built is not None and built[0].eq(term):
        return built[1]
    shifted = _shift_amount(term)
    if shifted is not None:
        inner = floor_form(shifted[0])
        return None if inner is None else (inner[0], inner[1], inner[2] + shifted[1])
    return _mul_hi(term) or _add_form(term) or _wide(term) or _low_half(term)


def _low_half(term: z3.ExprRef) -> FloorForm | None:
    """`Extract(v-1, 0, T)`, T a floor form (zext(x), M, n) with x of v bits and T below 2^v: (x, M, n)."""
    if not z3.is_app_of(term, z3.Z3_OP_EXTRACT) or term.params()[1] != 0:
        return None
    inner = floor_form(term.arg(0))
    if inner is None or not z3.is_app_of(inner[0], z3.Z3_OP_ZERO_EXT):
        return None
    x = inner[0].arg(0)
    if x.size() != term.size() or upper(term.arg(0)) >= 1 << x.size():
        return None
    return x, inner[1], inner[2]


def _signed_mul_hi(term: z3.ExprRef) -> tuple[z3.BitVecRef, int, int] | None:
    """(x, M, w) where the term is `mul.hi.s x, M`: Extract(2w-1, w, sext(x) · sext(M)), 0 < M < 2^(w-1)."""
    return _high_half(term, z3.Z3_OP_SIGN_EXT, lambda m, w: 0 < m < 1 << (w - 1))


def _arithmetic_shift(term: z3.ExprRef) -> tuple[z3.BitVecRef, int]:
    """(y, c) where the term is y >>ₐ c for a constant c below the width, else (term, 0)."""
    return _shift_amount(term, z3.Z3_OP_BASHR) or (term, 0)


def _signed_division(term: z3.ExprRef) -> z3.BitVecRef | None:
    """`(h >>ₐ c) + (h >>ₗ (w-1))` with h = mul.hi.s x, M, as trunc(x/d) (the module docstring's theorem)."""
    if not z3.is_app_of(term, z3.Z3_OP_BADD) or term.num_args() != 2:
        return None
    w = term.size()
    for quotient, sign in ((term.arg(0), term.arg(1)), (term.arg(1), term.arg(0))):
        h, c = _arithmetic_shift(quotient)
        hi, sign_of = _signed_mul_hi(h), _shift_amount(sign)
        if hi is None or sign_of is None or sign_of[1] != w - 1 or not sign_of[0].eq(h):
            continue
        x, m, _ = hi
        n = w + c
        d = -(-(1 << n) // m)
        e = m * d - (1 << n)
        if e < 1 or (1 << (w - 1)) * e > 1 << n:
            continue
        divisor_ = z3.BitVecVal(d, w)
        return z3.If(x < 0, -z3.UDiv(-x, divisor_), z3.UDiv(x, divisor_))
    return None


def _sum_bound(bounds: list[int], w: int, combine) -> int:
    total = bounds[0]
    for b in bounds[1:]:
        total = combine(total, b)
    return total if total < 1 << w else (1 << w) - 1


def upper(term: z3.ExprRef, seen: dict[int, int] | None = None) -> int:
    """An upper bound on the unsigned value of a bit-vector term, read off its structure (sound: each case
    bounds what its operation can produce; anything else gets the width's maximum). `seen` holds the bounds
    of shared subterms already read."""
    seen = {} if seen is None else seen
    key = term.get_id()
    if key not in seen:
        seen[key] = _upper(term, lambda t: upper(t, seen))
    return seen[key]


def _upper(term: z3.ExprRef, upper) -> int:
    w = term.size()
    top = (1 << w) - 1
    if z3.is_bv_value(term):
        return term.as_long()
    if not z3.is_app(term):
        return top
    form = floor_form(term)
    if form is not None:   # ⌊x·M / 2^n⌋ grows with x
        return min((upper(form[0]) * form[1]) >> form[2], top)
    kind = term.decl().kind()
    args = [term.arg(i) for i in range(term.num_args())]
    if kind == z3.Z3_OP_ZERO_EXT:
        return upper(args[0])
    if kind == z3.Z3_OP_CONCAT and z3.is_bv_value(args[0]) and args[0].as_long() == 0:
        return upper(z3.Concat(*args[1:])) if len(args) > 2 else upper(args[1])
    if kind == z3.Z3_OP_EXTRACT and term.params()[1] == 0:
        return min(upper(args[0]), top)
    if kind == z3.Z3_OP_BLSHR and _value(args[1]) is not None:
        return upper(args[0]) >> min(_value(args[1]), w)
    if kind in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I) and (_value(args[1]) or 0) > 0:
        return upper(args[0]) // _value(args[1])
    if kind in (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I) and (_value(args[1]) or 0) > 0:
        return min(upper(args[0]), _value(args[1]) - 1)
    if kind == z3.Z3_OP_BAND:
        return min(upper(a) for a in args)
    if kind == z3.Z3_OP_BADD:
        return _sum_bound([upper(a) for a in args], w, lambda a, b: a + b)
    if kind == z3.Z3_OP_BMUL:
        return _sum_bound([upper(a) for a in args], w, lambda a, b: a * b)
    if kind == z3.Z3_OP_ITE:
        return max(upper(args[1]), upper(args[2]))
    return top


def divisor(m: int, n: int, bound: int) -> int | None:
    """The d with ⌊x·m / 2^n⌋ = ⌊x/d⌋ for every 0 ≤ x ≤ bound, by the theorem: d = ⌈2^n/m⌉ (the only
    candidate with 0 ≤ e = m·d − 2^n < m) when bound·e < 2^n; else None."""
    if m <= 0:
        return None
    d = -(-(1 << n) // m)
    e = m * d - (1 << n)
    return d if bound * e < 1 << n else None


def _merged(x: z3.BitVecRef, d: int) -> z3.BitVecRef | None:
    """x / d, folding a division or shift already in x into one division: ⌊⌊y/a⌋/d⌋ = ⌊y/(a·d)⌋."""
    w = x.size()
    if d >= 1 << w:
        return None
    shifted = _shift_amount(x)
    if shifted is not None and d << shifted[1] < 1 << w:
        return z3.UDiv(shifted[0], d << shifted[1])
    if z3.is_app_of(x, z3.Z3_OP_BUDIV) and (_value(x.arg(1)) or 0) > 0 and d * _value(x.arg(1)) < 1 << w:
        return z3.UDiv(x.arg(0), d * _value(x.arg(1)))
    return z3.UDiv(x, z3.BitVecVal(d, w))


def _shifted_left(term: z3.ExprRef) -> tuple[z3.BitVecRef, int]:
    """(t, a) where the term is t << a for a constant a below the width, else (term, 0)."""
    if z3.is_app_of(term, z3.Z3_OP_BSHL):
        a = _value(term.arg(1))
        if a is not None and a < term.size():
            return term.arg(0), a
    return term, 0


def _low_cleared(term: z3.ExprRef) -> z3.ExprRef | None:
    """`(t << a) & c`, c the ones of bits k..h (k ≥ a) and t·2^a below 2^(h+1): that is (t >> (k - a))·2^k
    (no bit of t·2^a is lost or lies above h), with t >> (k - a) rewritten as a division where it is one.
    LLVM clears a quotient's low bits so that (x / d / 2^j)·2^k reuses the product of x / d:
    `and.b64 r, hi, 0x3FFFFFFFFF800000`, `shl.b64 r, q, 1; and.b64 r, r, 0x3FFFFFFFFFFC0000`."""
    if not z3.is_app_of(term, z3.Z3_OP_BAND) or term.num_args() != 2:
        return None
    for shifted, c in ((term.arg(0), term.arg(1)), (term.arg(1), term.arg(0))):
        mask = _value(c)
        t, a = _shifted_left(shifted)
        if not mask or floor_form(t) is None:
            continue
        k = (mask & -mask).bit_length() - 1
        h = mask.bit_length() - 1
        if mask != (1 << (h + 1)) - (1 << k) or k < a or (h < t.size() - 1 and upper(t) << a >= 1 << (h + 1)):
            continue
        quotient = rewrite(z3.LShR(t, z3.BitVecVal(k - a, t.size())))
        if z3.is_app_of(quotient, z3.Z3_OP_BUDIV):
            return quotient * (1 << k)
    return None


def rewrite(term: z3.ExprRef) -> z3.ExprRef:
    """`term` as a division by a constant where it is a floor form the theorem covers, or nvcc's signed
    division (as trunc(x/d) through unsigned divisions); `(x / d) >> c` as
    x / (d·2^c); a floor form with its low bits cleared as (x / d)·2^k; else `term` unchanged."""
    if not z3.is_bv(term):
        return term
    signed = _signed_division(term)
    if signed is not None:
        return signed
    cleared = _low_cleared(term)
    if cleared is not None:
        return cleared
    form = floor_form(term)
    if form is not None:
        x, m, n = form
        d = divisor(m, n, upper(x))
        merged = None if d is None or d == 1 else _merged(x, d)
        if merged is not None:
            _BUILT[merged.get_id()] = (merged, form)
            return merged
    shifted = _shift_amount(term)
    if shifted is not None and z3.is_app_of(shifted[0], z3.Z3_OP_BUDIV):
        merged = _merged(shifted[0], 1 << shifted[1])
        return term if merged is None else merged
    return term
