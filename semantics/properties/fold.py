"""Terms that are one template at the points of a box, folded into one family.

A reduction over a block leaves one term per thread (a shared-memory tree's leaves, a Triton `tl.sum`
over threads × register lanes, the unrolled products of a tile step), each already simplified with its
thread or lane concrete. Matching those N terms one by one against the reference costs N times the
obligations of one. Here they are grouped: terms with the same shape whose integer constants all move
affinely along the axes of a box are the template P(u₁, …, u_k) at the points of
B = [0, n₁) × … × [0, n_k), P having each moving constant c replaced by c₀ + d₁·u₁ + … + d_k·u_k
(mod 2^width).

The box is found in levels. Level one sorts a bucket of same-shaped terms by their moving constants (the
constant with the fewest distinct values first) and cuts the sorted list into maximal runs along which
every constant moves by one fixed step: each run is a template over one axis u₁ ∈ [0, n). Level two treats
the templates of the runs as terms and folds them the same way (runs of templates with one shape and one
box become a template over one more axis), and so on. A Triton block of 128 threads × 8 register lanes
is then a few templates over (thread, lane) instead of 1024 terms, whatever BLOCK is.

Everything here is a guess (anti-unification). The matcher proves that each term equals the template at
its point (`Fold.equalities`, one obligation), and checks that the points are exactly the box
(`Fold.fills_box`, arithmetic on a list), so the terms' multiset is exactly {P(u) : u ∈ B} and each point
stands for exactly one term (which sums need).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import z3

MIN_LEAVES = 3          # below this, folding terms saves nothing
MIN_MERGE = 2           # folds of one shape and box merged into one more axis
MAX_AXES = 3            # levels of folding
MAX_COLUMNS = 4096      # integer constants per term (tree size, not DAG size) beyond which a term is left alone

Point = tuple[int, ...]


@dataclass(frozen=True)
class Outer:
    """The index set B = [0, n₁) × … × [0, n_k) of a folded family, one 64-bit variable per axis."""

    vars: tuple[z3.BitVecRef, ...]
    counts: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.counts)

    def contains(self, point: Sequence[z3.BitVecRef]) -> z3.BoolRef:
        return z3.And([z3.ULT(u, n) for u, n in zip(point, self.counts, strict=True)])

    def points(self) -> Iterator[Point]:
        return itertools.product(*(range(n) for n in self.counts))

    def at(self, point: Point) -> list[tuple[z3.BitVecRef, z3.BitVecRef]]:
        """The substitution that puts the family at `point`."""
        return [(var, z3.BitVecVal(u, 64)) for var, u in zip(self.vars, point, strict=True)]

    def describe(self) -> str:
        return " × ".join(f"[0, {n})" for n in self.counts)


@dataclass(frozen=True)
class Fold:
    """`members[i]` is guessed to be `template` at `points[i]`."""

    template: z3.ExprRef
    outer: Outer
    members: tuple[z3.ExprRef, ...]
    points: tuple[Point, ...]

    def instances(self) -> list[z3.ExprRef]:
        return [z3.substitute(self.template, *self.outer.at(p)) for p in self.points]

    def equalities(self) -> z3.BoolRef:
        """Negated: some term differs from the template at its point (unsat proves the fold)."""
        return z3.Or([m != p for m, p in zip(self.members, self.instances(), strict=True)])

    def fills_box(self) -> bool:
        """The points are the box, each once: the terms are then exactly one per point."""
        return sorted(self.points) == list(self.outer.points())

    def syntactic(self) -> bool:
        """Every term is the simplified template at its point, term for term up to the names of bound
        variables (each comprehension has its own): a cheap filter before the obligation (a fold that fails
        here is dropped, not trusted when it passes)."""
        shapes = _Shapes()
        return all(shapes.of(z3.simplify(p, elim_sign_ext=False)) == shapes.of(m) is not None
                   for m, p in zip(self.members, self.instances(), strict=True))


class _Shapes:
    """Per DAG node: a structural key with every bit-vector numeral abstracted to its width, and the numerals
    in tree order, (width, value) each. Memoised by node id (the terms stay alive while it is used), so
    shared subterms cost once."""

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
        head: object = (decl.kind(), decl.name(), tuple(str(p) for p in decl.params()), str(term.sort()))
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

    def safe(self, term: z3.ExprRef) -> tuple[object, tuple[tuple[int, int], ...]] | None:
        try:
            return self.of(term)
        except RecursionError:   # a very deep term is simply left alone
            return None


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


def _lambda(old: z3.QuantifierRef, body: z3.ExprRef, name: str | None = None) -> z3.ExprRef:
    """`old` with a new body that still names its bound variable by de Bruijn index (and is called `name`)."""
    ctx = old.ctx
    sorts = (z3.Sort * 1)(old.var_sort(0).ast)
    names = (z3.Symbol * 1)(z3.to_symbol(name or old.var_name(0), ctx))
    return z3.QuantifierRef(z3.Z3_mk_lambda(ctx.ref(), 1, sorts, names, body.as_ast()), ctx)


def _canonical(term: z3.ExprRef, memo: dict[int, tuple[z3.ExprRef, int]]) -> tuple[z3.ExprRef, int]:
    """`term` with every lambda's bound variable named by how many lambdas nest inside it, and that nesting
    depth. Names do not change what a term means (variables are bound by de Bruijn index), but two
    comprehensions that differ only in them are distinct terms to z3, and the proof that a term is its
    template's instance should be a syntactic one."""
    found = memo.get(term.get_id())
    if found is not None:
        return found
    if z3.is_quantifier(term):
        body, depth = _canonical(term.body(), memo)
        lam = term.is_lambda() and term.num_vars() == 1
        out = (_lambda(term, body, f"fold!{depth}"), depth + 1) if lam else (term, depth + 1)
    elif z3.is_app(term) and term.num_args():
        children = [_canonical(child, memo) for child in term.children()]
        same = all(a.get_id() == b.get_id() for (a, _), b in zip(children, term.children(), strict=True))
        depth = max(d for _, d in children)
        out = (term if same else term.decl()(*(c for c, _ in children)), depth)
    else:
        out = (term, 0)
    memo[term.get_id()] = out
    memo[out[0].get_id()] = out
    return out


def _as_width(u: z3.BitVecRef, width: int) -> z3.BitVecRef:
    if width == 64:
        return u
    return z3.Extract(width - 1, 0, u) if width < 64 else z3.ZeroExt(width - 64, u)


@dataclass
class _Group:
    """A fold under construction: its template over the axes built so far."""

    template: z3.ExprRef
    counts: tuple[int, ...]
    members: list[z3.ExprRef]
    points: list[Point]


def _progressions(rows: list[tuple[tuple[tuple[int, int], ...], object]], min_len: int) -> list[list]:
    """Rows (columns, payload) of one shape, sorted by their moving columns (fewest distinct values first),
    cut into maximal runs along which every moving column moves by one step (mod 2^width)."""
    columns = list(zip(*(cols for cols, _ in rows), strict=True))
    distinct = {p: len(set(column)) for p, column in enumerate(columns)}
    moving = sorted((p for p, n in distinct.items() if n > 1), key=lambda p: (distinct[p], p))
    rows = sorted(rows, key=lambda row: tuple(row[0][p][1] for p in moving))

    steps = [tuple((b[0][p][1] - a[0][p][1]) % (1 << a[0][p][0]) for p in moving)
             for a, b in itertools.pairwise(rows)]
    # maximal stretches [i, k] of rows with one step between neighbours; two stretches share at most an end
    # row, which goes to the longer one
    stretches, i = [], 0
    while i < len(steps):
        k = i
        while k < len(steps) and steps[k] == steps[i]:
            k += 1
        stretches.append((i, k))
        i = k
    taken = [False] * len(rows)
    runs = []
    for i, k in sorted(stretches, key=lambda s: (s[0] - s[1], s[0])):
        i += taken[i]
        k -= taken[k]
        if k + 1 - i >= min_len:
            runs.append((i, rows[i:k + 1]))
            taken[i:k + 1] = [True] * (k + 1 - i)
    return [run for _, run in sorted(runs, key=lambda r: r[0])]


def _template(run: list, axis: z3.BitVecRef, shapes: _Shapes) -> z3.ExprRef:
    """The first row's term with each column that moves along the run as c₀ + d·axis."""
    (first, term), (second, _) = run[0], run[1]
    holes = {}
    for p, ((width, a), (_, b)) in enumerate(zip(first, second, strict=True)):
        d = (b - a) % (1 << width)
        if d:
            holes[p] = z3.BitVecVal(a, width) + z3.BitVecVal(d, width) * _as_width(axis, width)
    return _rebuild(term, 0, holes, shapes)


def _first_level(terms: list[z3.ExprRef], axis: z3.BitVecRef, shapes: _Shapes) -> tuple[list[_Group], list]:
    buckets: dict[object, list] = {}
    alone: list[z3.ExprRef] = []
    for term in terms:
        shape = shapes.safe(term)
        if shape is None:
            alone.append(term)
        else:
            buckets.setdefault(shape[0], []).append((shape[1], term))
    groups: list[_Group] = []
    for rows in buckets.values():
        runs = _progressions(rows, MIN_LEAVES) if len(rows) >= MIN_LEAVES else []
        folded = set()
        for run in runs:
            members = [term for _, term in run]
            folded.update(t.get_id() for t in members)
            groups.append(_Group(_template(run, axis, shapes), (len(run),), members, [(u,) for u in range(len(run))]))
        alone.extend(term for _, term in rows if term.get_id() not in folded)
    return groups, alone


def _next_level(groups: list[_Group], axis: z3.BitVecRef, shapes: _Shapes) -> list[_Group]:
    """Groups whose templates have one shape and whose boxes are equal, at points moving by one step, merged
    into one group over one more axis."""
    buckets: dict[object, list] = {}
    out: list[_Group] = []
    for group in groups:
        shape = shapes.safe(group.template)
        if shape is None:
            out.append(group)
        else:
            buckets.setdefault((shape[0], group.counts), []).append((shape[1], group))
    for rows in buckets.values():
        runs = _progressions(rows, MIN_MERGE) if len(rows) >= MIN_MERGE else []
        merged = set()
        for run in runs:
            parts = [group for _, group in run]
            merged.update(id(g) for g in parts)
            out.append(_Group(_template([(cols, g.template) for cols, g in run], axis, shapes),
                              (*parts[0].counts, len(parts)),
                              [m for g in parts for m in g.members],
                              [(*p, u) for u, g in enumerate(parts) for p in g.points]))
        out.extend(group for _, group in rows if id(group) not in merged)
    return out


def fold(terms: list[z3.ExprRef], prefix: str, max_axes: int = MAX_AXES) -> tuple[list[Fold], list[z3.ExprRef]]:
    """Group `terms` into folds over boxes of up to `max_axes` axes (a guess each) and the terms left alone
    (all of them with their bound variables renamed, `_canonical`)."""
    shapes, memo = _Shapes(), {}
    axes = [z3.BitVec(f"{prefix}axis{k}", 64) for k in range(max_axes)]
    groups, alone = _first_level([_canonical(t, memo)[0] for t in terms], axes[0], shapes)
    for axis in axes[1:]:
        groups = _next_level(groups, axis, shapes)
    folds = []
    for n, group in enumerate(groups):
        names = tuple(z3.BitVec(f"{prefix}{n}.{k}!tau", 64) for k in range(len(group.counts)))
        template = z3.substitute(group.template, *zip(axes, names, strict=False))
        folds.append(Fold(template, Outer(names, group.counts), tuple(group.members), tuple(group.points)))
    return folds, alone
