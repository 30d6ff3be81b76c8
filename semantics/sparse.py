"""Replaying a long Sum/Prod/MaxFrom without enumerating its terms: witness inputs are sparse.

A replayed witness gives each input buffer finitely many explicit elements (the model's table and the
overrides) and one default value for every other element. When a comprehension's bound variable j occurs
only inside the indices of input reads, its body takes the same value at every j whose reads all miss the
explicit elements; so the comprehension is its *special* terms (some read hits an explicit element), each
evaluated, plus `count - #special` copies of the term at one other j. Exactness needs every special j:
each read index, with the witness's thread and block put in, is proved affine in j on [lo, hi) (one solver
call, remembered), and a + s·j ≡ p (mod 2^64) is solved by arithmetic for each explicit element p.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import z3

from semantics.comprehension import is_comprehension
from semantics.terms import constants, mentions

MAX_SPECIAL = 4096
_AFFINE: dict[tuple[int, int, int], tuple[z3.ExprRef, tuple[int, int] | None]] = {}


def reads_of(body: z3.ExprRef, j: z3.BitVecRef) -> list[z3.ExprRef] | None:
    """The input reads F(idx(j)) of `body`, or None when j occurs elsewhere (the body is then not constant
    between the special points)."""
    reads, todo, seen = [], [body], set()
    while todo:   # a reduction nested in the body without j (a row's mean in Σ (x - mean)²) is constant in j
        t = todo.pop()
        if t.get_id() in seen or (is_comprehension(t) and not mentions(t, j)):
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED and t.num_args() == 1 and z3.is_bv(t.arg(0)) \
                and mentions(t.arg(0), j):
            reads.append(t)
        todo.extend([t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else [])
    stand_ins = [(r, z3.FreshConst(r.sort(), "read")) for r in reads]
    rest = z3.substitute(body, *stand_ins) if stand_ins else body
    return None if mentions(rest, j) else reads


def structural(term: z3.BitVecRef, j: z3.BitVecRef, lo: int, hi: int) -> tuple[int, int] | None:
    """(a, s) with term(j) ≡ a + s·j (mod 2^w, w its width) for every j in [lo, hi), read off the term's
    operations, each exact: + - · by a constant and << by a constant are linear modulo 2^w, an Extract of the
    low bits keeps the line modulo the narrower width, and a zero or sign extension keeps it only where the
    narrower line never wraps on [lo, hi) (checked at both ends, in the extension's reading). None for any
    other operation (the caller asks the solver)."""
    w = term.size()
    modulus = 1 << w
    if z3.eq(term, j):
        return (0, 1)
    if z3.is_bv_value(term):
        return (term.as_long(), 0)
    if not z3.is_app(term):
        return None
    kind, args = term.decl().kind(), term.children()
    if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB, z3.Z3_OP_BNEG):
        forms = [structural(a, j, lo, hi) for a in args]
        if None in forms:
            return None
        if kind == z3.Z3_OP_BNEG:
            return (-forms[0][0] % modulus, -forms[0][1] % modulus)
        sign = [1] + [-1 if kind == z3.Z3_OP_BSUB else 1] * (len(forms) - 1)
        return (sum(g * f[0] for g, f in zip(sign, forms, strict=True)) % modulus,
                sum(g * f[1] for g, f in zip(sign, forms, strict=True)) % modulus)
    if kind == z3.Z3_OP_BMUL:
        consts = [a.as_long() for a in args if z3.is_bv_value(a)]
        others = [a for a in args if not z3.is_bv_value(a)]
        if len(others) > 1:
            return None
        factor = math.prod(consts) % modulus
        form = structural(others[0], j, lo, hi) if others else (1, 0)
        return None if form is None else (form[0] * factor % modulus, form[1] * factor % modulus)
    if kind == z3.Z3_OP_BSHL and z3.is_bv_value(args[1]) and args[1].as_long() < w:
        form, k = structural(args[0], j, lo, hi), args[1].as_long()
        return None if form is None else ((form[0] << k) % modulus, (form[1] << k) % modulus)
    if kind == z3.Z3_OP_EXTRACT and term.params()[1] == 0:
        form = structural(args[0], j, lo, hi)
        return None if form is None else (form[0] % modulus, form[1] % modulus)
    if kind in (z3.Z3_OP_ZERO_EXT, z3.Z3_OP_SIGN_EXT):
        inner = args[0]
        form = structural(inner, j, lo, hi)
        line = None if form is None else _unwrapped(form, inner.size(), lo, hi, kind == z3.Z3_OP_SIGN_EXT)
        return None if line is None else (line[0] % modulus, line[1] % modulus)
    return None


def _unwrapped(form: tuple[int, int], w: int, lo: int, hi: int, signed: bool) -> tuple[int, int] | None:
    """The integer line (c, s) a line modulo 2^w stands for on [lo, hi), in the unsigned or signed reading:
    when it stays inside that reading's range at both ends, no value wraps in between (the slope taken in
    its signed reading); None otherwise."""
    modulus = 1 << w
    c, slope = form[0], form[1] - modulus if form[1] >= modulus // 2 else form[1]
    if signed and c >= modulus // 2:
        c -= modulus
    low, high = (-(modulus // 2), modulus // 2) if signed else (0, modulus)
    if lo >= hi or not all(low <= c + slope * end < high for end in (lo, hi - 1)):
        return None
    return c, slope


def affine(index: z3.BitVecRef, j: z3.BitVecRef, lo: int, hi: int) -> tuple[int, int] | None:
    """(a, s) with index(j) = a + s·j (mod 2^64) for every j in [lo, hi), read off its operations
    (`structural`) or else proved; index has no other free symbol."""
    return _line(index, j, lo, hi) if index.size() == 64 else None


def _line(term: z3.BitVecRef, j: z3.BitVecRef, lo: int, hi: int) -> tuple[int, int] | None:
    """(a, s) with term(j) ≡ a + s·j (mod 2^w) on [lo, hi): read off the operations, or else read off two points
    and proved by the solver; remembered per term and range (the term kept alive with its id)."""
    key = (term.get_id(), lo, hi)
    if key not in _AFFINE:
        _AFFINE[key] = (term, structural(term, j, lo, hi) or _proved_line(term, j, lo, hi))
    return _AFFINE[key][1]


def solutions(a: int, s: int, p: int, lo: int, hi: int) -> list[int] | None:
    """Every j in [lo, hi) with a + s·j ≡ p (mod 2^64); None when there are too many to list."""
    modulus = 1 << 64
    if s == 0:
        return None if (a - p) % modulus == 0 else []
    g = math.gcd(s, modulus)
    if (p - a) % g:
        return []
    period = modulus // g
    j0 = ((p - a) // g * pow(s // g, -1, period)) % period if period > 1 else 0
    first = lo + (j0 - lo) % period
    found = list(range(first, hi, period))
    return found if len(found) <= MAX_SPECIAL else None


def special_indices(body: z3.ExprRef, j: z3.BitVecRef, lo: int, hi: int, concrete: Callable,
                    explicit: Callable[[z3.FuncDeclRef], list[int] | None]) -> list[int] | None:
    """The j in [lo, hi) at which some read of `body` hits an explicit element. `concrete(term)` puts the
    witness's values in for the term's free symbols other than j; `explicit(decl)` lists a buffer's
    explicit elements (None: its other elements have no one value)."""
    reads = reads_of(body, j)
    if reads is None:
        return None
    special: set[int] = set()
    for read in reads:
        form = affine(concrete(read.arg(0)), j, lo, hi)
        if form is None:
            return None
        points = explicit(read.decl())
        if points is None:
            return None
        for p in points:
            found = solutions(*form, p, lo, hi)
            if found is None:
                return None
            special.update(found)
            if len(special) > MAX_SPECIAL:
                return None
    return sorted(special)


def other_index(special: list[int], lo: int, hi: int) -> int | None:
    """The least j in [lo, hi) that is not special, if any."""
    taken = set(special)
    return next((j for j in range(lo, min(hi, lo + len(special) + 1)) if j not in taken), None)


def free_symbols(term: z3.ExprRef, j: z3.BitVecRef) -> list[z3.ExprRef]:
    return [c for c in constants(term) if not z3.eq(c, j)]


# ------------------------------------------------------------------ guards: cutting [lo, hi) into pieces

MAX_PIECES = 64
SIGNED = {z3.Z3_OP_ULT: False, z3.Z3_OP_ULEQ: False, z3.Z3_OP_UGT: False, z3.Z3_OP_UGEQ: False,   # a comparison:
          z3.Z3_OP_SLT: True, z3.Z3_OP_SLEQ: True, z3.Z3_OP_SGT: True, z3.Z3_OP_SGEQ: True,       # does it read
          z3.Z3_OP_EQ: False}                                                                 # its sides signed


def guards_of(body: z3.ExprRef, j: z3.BitVecRef) -> list[z3.BoolRef]:
    """The comparisons of bit-vector terms in `body` that mention j (a Triton mask `cols < n`, a strided loop's
    bound `tid + 256·j < n`; one that reads an input is no line in j, and `guard_pieces` refuses it)."""
    found, todo, seen = [], [body], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not mentions(t, j):
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.decl().kind() in SIGNED and t.num_args() == 2 and z3.is_bv(t.arg(0)):
            found.append(t)
            continue
        todo.extend([t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else [])
    return found


def _integer_line(term: z3.BitVecRef, j: z3.BitVecRef, lo: int, hi: int, signed: bool) -> tuple[int, int] | None:
    """(c, s) with term(j) = c + s·j as an integer (unsigned or signed reading) for every j in [lo, hi): the
    term proved affine modulo 2^w and the line staying inside the reading's range at both ends, so no value
    wraps (a line between two points inside an interval stays inside it)."""
    form = _line(term, j, lo, hi) if term.size() <= 64 else None
    return None if form is None else _unwrapped(form, term.size(), lo, hi, signed)


def _proved_line(term: z3.BitVecRef, j: z3.BitVecRef, lo: int, hi: int) -> tuple[int, int] | None:
    """(a, s) with term(j) ≡ a + s·j (mod 2^w) on [lo, hi), read off two points and proved by the solver."""
    w = term.size()
    a = z3.simplify(z3.substitute(term, (j, z3.BitVecVal(0, 64))))
    b = z3.simplify(z3.substitute(term, (j, z3.BitVecVal(1, 64))))
    if not (z3.is_bv_value(a) and z3.is_bv_value(b)):
        return None
    s = (b.as_long() - a.as_long()) % (1 << w)
    solver = z3.Solver()
    solver.set("timeout", 10000)
    solver.add(z3.ULE(lo, j), z3.ULT(j, hi), term != a.as_long() + s * (j if w == 64 else z3.Extract(w - 1, 0, j)))
    return (a.as_long(), s) if solver.check() == z3.unsat else None


def guard_pieces(body: z3.ExprRef, j: z3.BitVecRef, lo: int, hi: int,
                 concrete: Callable) -> list[tuple[int, int, tuple[tuple[z3.BoolRef, bool], ...]]] | None:
    """[lo, hi) cut into pieces on which every guard of `body` (`guards_of`) has one truth value, each piece
    (start, end, ((guard, truth), ...)); None when a guard is not a comparison of lines in j. Each guard,
    with the witness's values put in (`concrete`), compares two integer lines, so its truth changes only
    where their difference crosses 0; the pieces end there. Every piece is checked: the difference has one
    sign (<, = or > 0) at both its ends, so throughout (a line), and each guard is evaluated there."""
    guards = guards_of(body, j)
    points = {lo, hi}
    forms = []
    for g in guards:
        sides = [concrete(a) for a in g.children()]
        lines = [_integer_line(side, j, lo, hi, SIGNED[g.decl().kind()]) for side in sides]
        if None in lines:
            return None
        (c1, s1), (c2, s2) = lines
        dc, ds = c1 - c2, s1 - s2
        if ds:
            root = -dc // ds if ds > 0 else dc // -ds          # floor(-dc / ds)
            points |= {p for p in (root, root + 1) if lo < p < hi}
        ground = z3.simplify(z3.substitute(g, *[(x, y) for x, y in zip(g.children(), sides, strict=True)]))
        forms.append((g, ground, dc, ds))
    cuts = sorted(points)
    if len(cuts) - 1 > MAX_PIECES:
        return None
    pieces = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        truth = []
        for g, ground, dc, ds in forms:
            if _sign(dc + ds * start) != _sign(dc + ds * (end - 1)):
                return None
            at = [z3.simplify(z3.substitute(ground, (j, z3.BitVecVal(k, 64)))) for k in (start, end - 1)]
            if not all(z3.is_true(v) or z3.is_false(v) for v in at) or z3.is_true(at[0]) != z3.is_true(at[1]):
                return None
            truth.append((g, z3.is_true(at[0])))
        pieces.append((start, end, tuple(truth)))
    return pieces


def _sign(d: int) -> int:
    return (d > 0) - (d < 0)
