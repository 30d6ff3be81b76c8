"""Leaves of a reduction tree that are one term at consecutive indices, folded into one family.

A shared-memory tree over a block leaves, in s[0], a sum or max of one leaf per thread: the per-thread
value instantiated at thread 0, 1, …, N-1, each already simplified. Matching those N leaves one by one
against the reference costs N times the obligations of one. Here they are grouped: leaves with the same
shape whose integer constants all move affinely with one of them (the index τ) are the template P(τ) at
τ ∈ {τ₀ + σ·u : 0 ≤ u < n}, P having each moving constant c replaced by c₀ + d·τ (mod 2^width).

Everything here is a guess (anti-unification). The matcher proves that each leaf equals the template at
its index (`Fold.equalities`, one obligation), so the leaves' multiset is exactly {P(τ) : τ ∈ T}; the
indices τᵢ are distinct and form T, so each τ stands for exactly one leaf (which sums need).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

MIN_LEAVES = 3          # below this, folding saves nothing
MAX_COLUMNS = 4096      # integer constants per leaf (tree size, not DAG size) beyond which a leaf is left alone


@dataclass(frozen=True)
class Outer:
    """The index set T = {first + step·u : 0 ≤ u < count} of a folded family, τ its variable."""

    var: z3.BitVecRef
    first: int
    step: int
    count: int

    def contains(self, tau: z3.BitVecRef) -> z3.BoolRef:
        last = self.first + self.step * (self.count - 1)
        inside = z3.And(z3.ULE(self.first, tau), z3.ULE(tau, last))
        return inside if self.step == 1 else z3.And(inside, z3.URem(tau - self.first, self.step) == 0)

    def values(self) -> range:
        return range(self.first, self.first + self.step * self.count, self.step)


@dataclass(frozen=True)
class Fold:
    template: z3.ExprRef
    outer: Outer
    members: tuple[z3.ExprRef, ...]

    def instances(self) -> list[z3.ExprRef]:
        return [z3.substitute(self.template, (self.outer.var, z3.BitVecVal(t, 64))) for t in self.outer.values()]

    def equalities(self) -> z3.BoolRef:
        """Negated: some leaf differs from the template at its index (unsat proves the fold)."""
        return z3.Or([m != p for m, p in zip(self.members, self.instances(), strict=True)])

    def syntactic(self) -> bool:
        """Every leaf is the simplified template at its index, term for term: a cheap filter before the
        obligation (a fold that fails here is dropped, not trusted when it passes)."""
        return all(z3.eq(z3.simplify(p, elim_sign_ext=False), m)
                   for m, p in zip(self.members, self.instances(), strict=True))


class _Shapes:
    """Per DAG node: a structural key with every bit-vector numeral abstracted to its width, and the numerals
    in tree order, (width, value) each. Memoised by node id, so shared subterms cost once."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[object, tuple[tuple[int, int], ...]] | None] = {}

    def of(self, term: z3.ExprRef) -> tuple[object, tuple[tuple[int, int], ...]] | None:
        found = self.memo.get(term.get_id(), False)
        if found is not False:
            return found
        result = self._compute(term)
        if result is not None and len(result[1]) > MAX_COLUMNS:
            result = None
        self.memo[term.get_id()] = result
        return result

    def _compute(self, term: z3.ExprRef) -> tuple[object, tuple[tuple[int, int], ...]] | None:
        if z3.is_bv_value(term):
            return ("bv", term.size()), ((term.size(), term.as_long()),)
        if z3.is_var(term):
            return ("var", z3.get_var_index(term), str(term.sort())), ()
        if z3.is_quantifier(term):
            if not term.is_lambda() or term.num_vars() != 1:
                return None
            body = self.of(term.body())
            return None if body is None else (("lambda", str(term.var_sort(0)), body[0]), body[1])
        if not z3.is_app(term):
            return None
        decl = term.decl()
        head: object = (decl.kind(), decl.name(), tuple(str(p) for p in decl.params()))
        if decl.kind() != z3.Z3_OP_UNINTERPRETED and term.num_args() == 0:
            head = (head, str(term))  # other numerals (reals, booleans) are part of the shape
        keys, columns = [head], []
        for child in term.children():
            shape = self.of(child)
            if shape is None:
                return None
            keys.append(shape[0])
            columns.extend(shape[1])
        return tuple(keys), tuple(columns)


def _rebuild(term: z3.ExprRef, start: int, holes: dict[int, z3.BitVecRef], shapes: _Shapes) -> z3.ExprRef:
    """`term` with the numerals at tree positions start + p (p in holes) replaced by holes[start + p]."""
    count = len(shapes.of(term)[1])
    if not any(start <= p < start + count for p in holes):
        return term
    if z3.is_bv_value(term):
        return holes[start]
    if z3.is_quantifier(term):
        return _lambda(term, _rebuild(term.body(), start, holes, shapes))
    children = []
    for child in term.children():
        children.append(_rebuild(child, start, holes, shapes))
        start += len(shapes.of(child)[1])
    return term.decl()(*children)


def _lambda(old: z3.QuantifierRef, body: z3.ExprRef) -> z3.ExprRef:
    """`old` with a new body that still names its bound variable by de Bruijn index."""
    ctx = old.ctx
    sorts = (z3.Sort * 1)(old.var_sort(0).ast)
    names = (z3.Symbol * 1)(z3.to_symbol(old.var_name(0), ctx))
    return z3.QuantifierRef(z3.Z3_mk_lambda(ctx.ref(), 1, sorts, names, body.as_ast()), ctx)


def _as_width(tau: z3.BitVecRef, width: int) -> z3.BitVecRef:
    if width == 64:
        return tau
    return z3.Extract(width - 1, 0, tau) if width < 64 else z3.ZeroExt(width - 64, tau)


def _signed(value: int, width: int) -> int:
    value %= 1 << width
    return value - (1 << width) if value >= 1 << (width - 1) else value


def _slope(a: tuple[int, int], b: tuple[int, int], width: int) -> int | None:
    """d with value_b - value_a ≡ d·(τ_b - τ_a) (mod 2^width), for (τ, value) pairs, if a whole one exists."""
    diff = _signed(b[1] - a[1], width)
    span = b[0] - a[0]
    return diff // span if diff % span == 0 else None


def _runs(rows: list[tuple[int, tuple[tuple[int, int], ...], z3.ExprRef]], moving: list[int]) -> list[list]:
    """Split rows sorted by τ into maximal runs with one step σ in which every moving column is affine in τ."""
    runs: list[list] = []
    for row in rows:
        run = runs[-1] if runs else None
        if run and _extends(run, row, moving):
            run.append(row)
        else:
            runs.append([row])
    return runs


def _extends(run: list, row, moving: list[int]) -> bool:
    first = run[0]
    if len(run) == 1:
        return all(_slope((first[0], first[1][p][1]), (row[0], row[1][p][1]), first[1][p][0]) is not None
                   for p in moving)
    second = run[1]
    if row[0] - run[-1][0] != second[0] - first[0]:
        return False
    for p in moving:
        width = first[1][p][0]
        d = _slope((first[0], first[1][p][1]), (second[0], second[1][p][1]), width)
        if (first[1][p][1] + d * (row[0] - first[0]) - row[1][p][1]) % (1 << width):
            return False
    return True


def fold(terms: list[z3.ExprRef], prefix: str) -> tuple[list[Fold], list[z3.ExprRef]]:
    """Group `terms` into folds (a guess each) and the terms left alone."""
    shapes = _Shapes()
    buckets: dict[object, list[tuple[z3.ExprRef, tuple[tuple[int, int], ...]]]] = {}
    alone: list[z3.ExprRef] = []
    for term in terms:
        try:
            shape = shapes.of(term)
        except RecursionError:   # a very deep term is simply left alone
            shape = None
        if shape is None:
            alone.append(term)
        else:
            buckets.setdefault(shape[0], []).append((term, shape[1]))
    folds: list[Fold] = []
    for members in buckets.values():
        found = _fold_bucket(members, f"{prefix}{len(folds)}", shapes) if len(members) >= MIN_LEAVES else None
        if found is None:
            alone.extend(term for term, _ in members)
            continue
        new_folds, rest = found
        folds.extend(new_folds)
        alone.extend(rest)
    return folds, alone


def _fold_bucket(members: list, name: str, shapes: _Shapes) -> tuple[list[Fold], list[z3.ExprRef]] | None:
    columns = list(zip(*(cols for _, cols in members), strict=True))
    moving = [p for p, column in enumerate(columns) if len(set(column)) > 1]
    index = next((p for p in moving if len(set(columns[p])) == len(members)), None)
    if index is None or max(value for _, value in columns[index]) >= 1 << 63:
        return None
    rows = sorted(((cols[index][1], cols, term) for term, cols in members), key=lambda r: r[0])
    folds, rest = [], []
    for n, run in enumerate(_runs(rows, moving)):
        if len(run) < MIN_LEAVES:
            rest.extend(term for _, _, term in run)
            continue
        tau = z3.BitVec(f"{name}.{n}!tau", 64)
        first, second = run[0], run[1]
        holes = {}
        for p in moving:
            width = first[1][p][0]
            d = _slope((first[0], first[1][p][1]), (second[0], second[1][p][1]), width)
            if d:
                c = (first[1][p][1] - d * first[0]) % (1 << width)
                holes[p] = z3.BitVecVal(c, width) + z3.BitVecVal(d % (1 << width), width) * _as_width(tau, width)
        template = _rebuild(first[2], 0, holes, shapes)
        outer = Outer(tau, first[0], second[0] - first[0], len(run))
        folds.append(Fold(template, outer, tuple(term for _, _, term in run)))
    return folds, rest
