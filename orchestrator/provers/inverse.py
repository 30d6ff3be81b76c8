"""Heuristic prover: propose which thread writes output element e (an inverse of the store index).

Untrusted: whatever it proposes is substituted into a coverage obligation that the checker proves or
rejects. It reads the store's element index as an affine combination of thread coordinates and loop
iterations with constant coefficients, and decodes e in mixed radix, largest coefficient first:
`4800·bx + 300·tx + 16·by + ty = e` gives bx = e / 4800, tx = (e % 4800) / 300, and so on. Variables the
index does not mention are proposed as 0. A loop counter of negative coefficient, below all others (a row
walked backwards, `_walked_backwards`), is decoded last from the column: k = (const - column) / a.

The index's constant c is subtracted from e first, except when it is below every coefficient (the lanes of
an unrolled or vector store, `4·j + 1048544·bx + 32767·tx + 2`): the floors then absorb it, and every lane
of every such store decodes the same e / 1048544, (e % 1048544) / 32767: a coverage obligation holds one
division per distinct dividend, and a division by a constant that is not a power of two is costly to z3.
For the same reason Triton's unrolled columns ((tid & 127) + 128·k) take it off at the last digit
(`_offset_digit`).
"""

from __future__ import annotations

import math

import z3

from orchestrator.provers import digits as radix
from orchestrator.provers.digits import DIVISIONS
from semantics.ptx.machine import simplify
from semantics.terms import constants, subterms

Linear = tuple[dict[str, tuple[z3.ExprRef, int]], int]
# A falling thread coordinate (a block's threads storing in reverse order, examples/llm_mirrored_store) is left
# to an agent; only a loop counter may fall (a row walked backwards, `_walked_backwards`).
THREAD_COORDINATES = frozenset(f"{kind}.{axis}" for kind in ("ctaid", "tid") for axis in "xyz")


def _signed(value: int, width: int) -> int:
    return value - (1 << width) if value >= 1 << (width - 1) else value


def _scale(form: Linear, factor: int) -> Linear:
    atoms, const = form
    return {k: (t, c * factor) for k, (t, c) in atoms.items()}, const * factor


def _add(a: Linear, b: Linear) -> Linear:
    atoms = dict(a[0])
    for k, (t, c) in b[0].items():
        atoms[k] = (t, atoms[k][1] + c) if k in atoms else (t, c)
    return {k: v for k, v in atoms.items() if v[1] != 0}, a[1] + b[1]


def linearize(term: z3.ExprRef) -> Linear | None:
    """term as Σ c·v + c0 over integers, ignoring wrap-around (the checker does not). A comprehension's
    bound variable (a de Bruijn index inside its body: a convolution's window coordinate m / K) is no
    atom: it has no name outside its binder."""
    if z3.is_var(term):
        return None
    if z3.is_bv_value(term):
        return {}, _signed(term.as_long(), term.size())
    if z3.is_const(term):
        return {str(term): (term, 1)}, 0
    kind, args = term.decl().kind(), term.children()
    if kind == z3.Z3_OP_BADD:
        forms = [linearize(a) for a in args]
        if None in forms:
            return None
        total: Linear = ({}, 0)
        for f in forms:
            total = _add(total, f)
        return total
    if kind == z3.Z3_OP_BMUL:
        consts = [a for a in args if z3.is_bv_value(a)]
        others = [a for a in args if not z3.is_bv_value(a)]
        if len(others) != 1:
            return None
        factor = 1
        for c in consts:
            factor *= _signed(c.as_long(), c.size())
        inner = linearize(others[0])
        return None if inner is None else _scale(inner, factor)
    if kind == z3.Z3_OP_BSHL and z3.is_bv_value(args[1]):
        inner = linearize(args[0])
        return None if inner is None else _scale(inner, 1 << args[1].as_long())
    if kind in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT):
        return linearize(args[0])
    if kind == z3.Z3_OP_EXTRACT:
        low = term.params()[1]
        return _shift_right(linearize(args[0]), low) or _high_part(term, args[0], low)
    if kind == z3.Z3_OP_CONCAT:  # hi·2^w(lo) + lo: exact, the way Triton's `or` of disjoint bits simplifies
        total: Linear = ({}, 0)
        shift = 0
        for part in reversed(args):
            form = ({}, part.as_long()) if z3.is_bv_value(part) else linearize(part)  # bit fields are unsigned
            if form is None:
                return None
            total = _add(total, _scale(form, 1 << shift))
            shift += part.size()
        return total
    if kind in (z3.Z3_OP_BOR, z3.Z3_OP_BAND) and len(args) == 2:
        # A guess: `or` of disjoint bit ranges is a sum, `and` with a low mask is a no-op on in-range values.
        forms = [linearize(a) for a in args]
        if kind == z3.Z3_OP_BAND:
            masks = [a for a in args if z3.is_bv_value(a)]
            others = [a for a in args if not z3.is_bv_value(a)]
            return linearize(others[0]) if len(masks) == 1 and len(others) == 1 else None
        return None if None in forms else _add(forms[0], forms[1])
    if kind == z3.Z3_OP_BLSHR and z3.is_bv_value(args[1]):
        return _shift_right(linearize(args[0]), args[1].as_long()) or _high_part(term, args[0], args[1].as_long())
    if kind in DIVISIONS and z3.is_bv_value(args[1]) and _power_of_two(args[1].as_long()):
        # `tid / warpSize` (div.s32 by WARP_SZ): for a thread id, a shift; a guess the checker tests
        bits = args[1].as_long().bit_length() - 1
        return _shift_right(linearize(args[0]), bits) or _high_part(term, args[0], bits)
    return None


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _high_part(term: z3.ExprRef, inner: z3.ExprRef, bits: int) -> Linear | None:
    """`v >> bits` of a plain variable v (a warp index tid.x / 32, say) as an atom of its own; `propose`
    inverts it as v = atom · 2^bits, leaving the low bits zero."""
    if bits == 0:
        return None
    if z3.is_const(inner):
        return {f"{inner}>>{bits}": (term, 1)}, 0
    # `(tid.x + 256·tid.y + 256·tid.z) >> 5`, a cooperative group's warp rank in the block: the one variable of
    # coefficient 1 keeps its low bits, the others (multiples of 2^bits) shift exactly (for in-range ids)
    form = linearize(inner)
    if form is None or form[1] % (1 << bits):
        return None
    low = [(name, t) for name, (t, c) in form[0].items() if c == 1]
    if len(low) != 1 or not z3.is_const(low[0][1]) or any(c % (1 << bits) for name, (_, c) in form[0].items()
                                                          if name != low[0][0]):
        return None
    name, variable = low[0]
    shifted = {n: (t, c >> bits) for n, (t, c) in form[0].items() if n != name}
    return {**shifted, f"{name}>>{bits}": (z3.LShR(variable, bits), 1)}, form[1] >> bits


def _shift_right(form: Linear | None, bits: int) -> Linear | None:
    """form / 2^bits, when every coefficient is divisible (byte offsets of aligned elements are)."""
    d = 1 << bits
    if form is None or form[1] % d or any(c % d for _, c in form[0].values()):
        return None
    return {k: (t, c // d) for k, (t, c) in form[0].items()}, form[1] // d


def split(key: str, dividend: z3.BitVecRef, divisor: int) -> tuple[z3.BitVecRef, z3.BitVecRef] | None:
    """dividend as divisor·A + B: A gathers the affine terms whose coefficients the divisor divides. A part
    that is not affine (a product of two values, a value read from memory) is one opaque term, so
    `(b·C + c)·HW + hw` with a runtime-derived b still splits by HW; the checker proves the split or drops it."""
    atoms, const = _opaque_linearize(simplify(dividend))
    opaque = [term for name, (term, _) in atoms.items() if name.startswith("opaque!")]
    if atoms and len(opaque) == len(atoms) or any(z3.is_var(t) for o in opaque for t in subterms(o)):
        return None   # nothing affine to take apart, or a comprehension's bound variable (no name outside it)
    quotient = z3.BitVecVal(const // divisor, 64)
    remainder = z3.BitVecVal(const % divisor, 64)
    for _, (term, c) in atoms.items():
        wide = _as64(term)
        if c % divisor == 0:
            quotient = quotient + wide * (c // divisor)
        else:
            remainder = remainder + wide * c
    return simplify(quotient), simplify(remainder)


def _opaque_linearize(term: z3.ExprRef) -> Linear:
    """`linearize`, with every part it cannot read (below sums and products by constants) an atom of its own."""
    form = linearize(term)
    if form is not None:
        return form
    if z3.is_app_of(term, z3.Z3_OP_BADD):
        total: Linear = ({}, 0)
        for part in term.children():
            total = _add(total, _opaque_linearize(part))
        return total
    if z3.is_app_of(term, z3.Z3_OP_BMUL):
        consts = [a for a in term.children() if z3.is_bv_value(a)]
        others = [a for a in term.children() if not z3.is_bv_value(a)]
        if len(others) == 1:
            factor = 1
            for c in consts:
                factor *= _signed(c.as_long(), c.size())
            return _scale(_opaque_linearize(others[0]), factor)
    if z3.is_app_of(term, z3.Z3_OP_CONCAT) and term.num_args() == 2 and z3.is_bv_value(term.arg(0)) \
            and term.arg(0).as_long() == 0 or z3.is_app_of(term, z3.Z3_OP_SIGN_EXT):
        return _opaque_linearize(term.arg(term.num_args() - 1))   # an extension: the same value (a guess)
    if z3.is_app_of(term, z3.Z3_OP_ITE):
        return _common_part(term)
    if z3.is_app_of(term, z3.Z3_OP_EXTRACT) and term.params()[0] == term.arg(0).size() - 1 and term.params()[1]:
        # the high bits of a byte offset (an element index): a shift, exact where every part is a multiple
        shifted = _shift_right(_opaque_linearize(term.arg(0)), term.params()[1])
        if shifted is not None:
            return shifted
    return {f"opaque!{term.get_id()}": (term, 1)}, 0


def _common_part(term: z3.ExprRef) -> Linear:
    """If(c, a, b) as the variables both branches hold alike (a loop's first column t + 256·P(t): both start at
    t) plus g times one opaque If of what is left, g the common factor of the rest: the opaque part is then a
    function of variables decoded without it (`_around_opaque`)."""
    a, b = (_opaque_linearize(x) for x in term.children()[1:])
    common = {n: v for n, v in a[0].items() if not n.startswith("opaque!") and b[0].get(n, (None, None))[1] == v[1]}
    rests = [(_add(f, _scale((common, 0), -1))) for f in (a, b)]
    factor = math.gcd(*(c for atoms, const in rests for c in (const, *(c for _, c in atoms.values()))))
    if not factor:
        return common, 0
    width = term.size()
    parts = [_term_of(_scale_down(f, factor), width) for f in rests]
    opaque = z3.If(term.arg(0), *parts)
    return _add((common, 0), ({f"opaque!{opaque.get_id()}": (opaque, factor)}, 0))


def _scale_down(form: Linear, factor: int) -> Linear:
    return {k: (t, c // factor) for k, (t, c) in form[0].items()}, form[1] // factor


def _term_of(form: Linear, width: int) -> z3.BitVecRef:
    """Σ c·v + c0 as a term of `width` bits (each part cut or extended to it)."""
    total = z3.BitVecVal(form[1], width)
    for term, c in form[0].values():
        fitted = z3.Extract(width - 1, 0, term) if term.size() > width else z3.ZeroExt(width - term.size(), term)
        total = total + fitted * c
    return simplify(total)


def _as64(term: z3.BitVecRef) -> z3.BitVecRef:
    return z3.ZeroExt(64 - term.size(), term) if term.size() < 64 else term


def _shifts_as_divisions(index: z3.BitVecRef, wide: bool = False) -> z3.BitVecRef:
    """The index with nvcc's signed division by 2^k read for a non-negative dividend (a guess the checker
    tests): the sign bits it adds (x >> 31) are 0, and x >> k or the bits k.. of x are x / 2^k, a digit the
    mixed-radix decoding knows. `wide`: a 64-bit position's too (a `long long` flat index i / HW, whose
    quotient z3 keeps as bits 18..61 of i: exactly the low bits of i / 2^18)."""
    signs = [(t, z3.BitVecVal(0, t.size())) for t in subterms(index)
             if z3.is_app_of(t, z3.Z3_OP_BASHR) and z3.is_bv_value(t.arg(1)) and t.arg(1).as_long() >= t.size() - 1]
    index = simplify(z3.substitute(index, *signs)) if signs else index
    pairs = []
    for t in subterms(index):
        if not z3.is_app(t) or t.num_args() == 0 or not z3.is_bv(t.arg(0)) or t.arg(0).size() > 32 and not wide:
            continue   # a C int's quotient, not bytes (and an If's condition is no bit-vector)
        if (z3.is_app_of(t, z3.Z3_OP_BASHR) or z3.is_app_of(t, z3.Z3_OP_BLSHR)) and z3.is_bv_value(t.arg(1)) \
                and 0 < t.arg(1).as_long() < t.size():
            pairs.append((t, z3.UDiv(t.arg(0), 1 << t.arg(1).as_long())))
        elif z3.is_app_of(t, z3.Z3_OP_EXTRACT) and 0 < t.params()[1] and \
                (wide or t.params()[0] == t.arg(0).size() - 1):
            high, low = t.params()
            pairs.append((t, z3.Extract(high - low, 0, z3.UDiv(t.arg(0), 1 << low))))
    return z3.substitute(index, *pairs) if pairs else index


def _offset_digit(index: z3.BitVecRef, digits: list, const: int) -> int:
    """Where the decoding takes the constant offset off: first (e - const, the general case), or at the last
    digit when that digit's variable is masked to m bits and the offset is a multiple of its coefficient
    times 2^m — Triton's unrolled columns (tid & 127) + 128·k, bit fields next to each other. Decoding the
    column there gives every unrolled store of a row the same division of e (one quotient and remainder
    for the coverage check instead of one pair per store)."""
    if not digits or const <= 0:
        return 0
    name, (variable, c) = digits[-1]
    if ">>" in name:
        return 0
    widths = [t.params()[0] + 1 for t in subterms(index)
              if z3.is_app_of(t, z3.Z3_OP_EXTRACT) and t.params()[1] == 0 and t.arg(0).eq(variable)]
    return len(digits) - 1 if widths and const % (c << max(widths)) == 0 else 0


def propose(key: str, index: z3.BitVecRef, variables: list[z3.BitVecRef],
            e: z3.BitVecRef) -> dict[str, z3.ExprRef] | None:
    """Terms in e for each variable such that index(vars) == e, or None when the index is not affine."""
    form = linearize(simplify(index))
    if form is None:
        return radix.propose(key, simplify(index), variables, e, linearize, propose) or \
            radix.propose(key, _shifts_as_divisions(simplify(index)), variables, e, linearize, propose) or \
            radix.propose(key, _shifts_as_divisions(simplify(index), wide=True), variables, e, linearize, propose) \
            or _around_opaque(simplify(index), variables, e)
    atoms, const = form
    names = {str(v) for v in variables}
    # A variable's high bits next to the variable itself (Triton ORs `tid >> 10` into the block index): guess
    # those bits are zero, as they are for ids inside the block; the checker tests the guess.
    atoms = {name: a for name, a in atoms.items() if ">>" not in name or name.split(">>")[0] not in atoms}
    if any(name.split(">>")[0] not in names for name in atoms):
        return None
    falling = [(name, (t, -c)) for name, (t, c) in atoms.items() if c < 0]
    if falling:
        counter = len(falling) == 1 and ">>" not in falling[0][0] and falling[0][0] not in THREAD_COORDINATES
        return _walked_backwards(atoms, const, falling[0], by_name={str(v): v for v in variables}, e=e) \
            if counter else None
    if any(c == 0 for _, c in atoms.values()):
        return None
    digits = sorted(atoms.items(), key=lambda item: -item[1][1])
    # The constant offset comes off before the first digit (e - const), at the last digit (Triton's unrolled
    # columns, `_offset_digit`), or never: one below every coefficient (the lanes 4j + c of an unrolled
    # store) is absorbed by the floors, so every lane decodes the same divisions of e.
    absorbed = 0 <= const < min((c for _, c in atoms.values()), default=1)
    place = len(digits) if absorbed else _offset_digit(simplify(index), digits, const)
    rest = e
    hint: dict[str, z3.ExprRef] = {}
    for n, (name, (_, c)) in enumerate(digits):
        if n == place:
            rest = rest - const
        value = z3.UDiv(rest, c)
        rest = z3.URem(rest, c)
        variable, _, bits = name.partition(">>")
        if variable in hint:
            return None
        hint[variable] = value << int(bits) if bits else value
    return _fitted(hint, {str(v): v for v in variables})


def _around_opaque(index: z3.BitVecRef, variables: list[z3.BitVecRef], e: z3.BitVecRef) -> dict[str, z3.ExprRef] | None:
    """An index affine but for one term O of the variables times c_O (nvcc's unrolled-by-4 loop after a prologue
    of n_t mod 4 iterations: 65535·bx + tx + 256·O(tx) + 1024·k + 256·lane). Decoded as: the digits above
    c_O that it does not divide first (bx = e / 65535), those below it from the rest modulo c_O (tx), then
    O at those values and the constant off, and the digits c_O divides from what is left, in c_O's units
    (k = ((rest - tx - 256·lane) / 256 - O(tx)) / 4). A guess the coverage obligation tests."""
    atoms, const = _opaque_linearize(index)
    opaque = [(t, c) for name, (t, c) in atoms.items() if name.startswith("opaque!")]
    by_name = {str(v): v for v in variables}
    plain = [(name, c) for name, (_, c) in atoms.items() if not name.startswith("opaque!")]
    if len(opaque) != 1 or opaque[0][1] <= 0 or any(n not in by_name or c <= 0 for n, c in plain):
        return None
    term, unit = opaque[0]
    if const % unit or any(z3.is_var(t) for t in subterms(term)):
        return None
    high = sorted(((n, c) for n, c in plain if c > unit and c % unit), key=lambda d: -d[1])
    low = sorted(((n, c) for n, c in plain if c < unit), key=lambda d: -d[1])
    mid = sorted(((n, c // unit) for n, c in plain if c >= unit and not c % unit), key=lambda d: -d[1])
    hint: dict[str, z3.ExprRef] = {}
    rest = e
    for name, c in high:
        hint[name], rest = z3.UDiv(rest, c), z3.URem(rest, c)
    below = z3.URem(rest, unit)
    for name, c in low:
        hint[name], below = z3.UDiv(below, c), z3.URem(below, c)
    known = _fitted(hint, {n: by_name[n] for n in hint})
    if any(str(v) in by_name and str(v) not in hint for v in constants(term)):
        return None       # O reads a variable decoded only after it
    at = z3.substitute(term, *((by_name[n], t) for n, t in known.items())) if known else term
    rest = z3.UDiv(rest - const, unit) - _as64(at)
    for name, c in mid:
        hint[name], rest = z3.UDiv(rest, c), z3.URem(rest, c)
    return _fitted(hint, by_name)


def _fitted(hint: dict[str, z3.ExprRef], by_name: dict[str, z3.BitVecRef]) -> dict[str, z3.ExprRef]:
    """The hint's 64-bit terms cut to each variable's width, 0 for a variable the index does not mention."""
    result = {}
    for name, v in by_name.items():
        term = hint.get(name, z3.BitVecVal(0, 64))
        result[name] = simplify(z3.Extract(v.size() - 1, 0, term) if v.size() < 64 else term)
    return result


def _walked_backwards(atoms: dict, const: int, falling: tuple, by_name: dict, e: z3.BitVecRef):
    """A row walked backwards (`for (c = cols - 1; c >= 0; --c)`, unrolled s times): the index is
    Σ c_i·v_i + const - a·k with one loop counter k of negative coefficient -a, below every other one, and
    const - a·k the column, inside [0, smallest c_i). The other digits decode e in mixed radix as usual (the
    column absorbed by their floors), and the column's remainder gives k = (const - rest) / a: exact for the
    lane whose column is congruent to e's, and a wrapped or misplaced guess for the others, which the
    coverage obligation tests like any other."""
    name, (_, a) = falling
    rising = sorted(((n, t) for n, t in atoms.items() if n != name), key=lambda item: -item[1][1])
    if const < 0 or any(c <= a for _, (_, c) in rising) or (rising and const >= rising[-1][1][1]):
        return None
    rest = e
    hint: dict[str, z3.ExprRef] = {}
    for digit, (_, c) in rising:
        variable, _, bits = digit.partition(">>")
        if variable in hint or variable == name:
            return None
        hint[variable] = z3.UDiv(rest, c) << int(bits) if bits else z3.UDiv(rest, c)
        rest = z3.URem(rest, c)
    hint[name] = z3.UDiv(const - rest, a)
    return _fitted(hint, by_name)
