"""Concrete evaluation of model terms on real numbers, to confirm a solver's counterexample.

Ideal functions are uninterpreted in the solver, so a model may give `exp` any values that happen to
break an equation. A witness is reported only after both sides are recomputed here with the true
functions (mpmath, 50 digits) and still differ. One table maps each z3 operator to its meaning.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

import mpmath
import z3

from semantics import arg_extrema, sparse
from semantics.axioms import IDEAL_FUNCTIONS
from semantics.comprehension import MAX_FROM, PROD, SUM, body_at, is_comprehension
from semantics.ptx.neginf import NEG_INF
from semantics.terms import nodes, subterms, wrap

mpmath.mp.dps = 50
MAX_EXPANDED_TERMS = 1 << 16
# Terms one evaluation expands in all (a reduction nested in another's body, at each outer index, is expanded
# again): a replay's cost is bounded by the witness, not by the product of nested reduction lengths.
MAX_TOTAL_TERMS = 1 << 18
SPARSE_FROM = 64   # longer comprehensions are replayed from their special terms when their body allows
EXACT_CONSTANTS = {"ln2": lambda: mpmath.log(2)}


class NotConcrete(Exception):
    """The term could not be evaluated (a division by zero, a function outside the reals)."""


def _fold(fn: Callable) -> Callable:
    def apply(args: list) -> object:
        result = args[0]
        for a in args[1:]:
            result = fn(result, a)
        return result
    return apply


REAL_OPS: dict[int, Callable[[list], object]] = {
    z3.Z3_OP_ADD: _fold(operator.add),
    z3.Z3_OP_SUB: _fold(operator.sub),
    z3.Z3_OP_MUL: _fold(operator.mul),
    z3.Z3_OP_DIV: lambda a: a[0] / a[1],
    z3.Z3_OP_UMINUS: lambda a: -a[0],
    z3.Z3_OP_LT: lambda a: a[0] < a[1],
    z3.Z3_OP_LE: lambda a: a[0] <= a[1],
    z3.Z3_OP_GT: lambda a: a[0] > a[1],
    z3.Z3_OP_GE: lambda a: a[0] >= a[1],
    z3.Z3_OP_EQ: lambda a: a[0] == a[1],
    z3.Z3_OP_DISTINCT: lambda a: a[0] != a[1],
    z3.Z3_OP_AND: all,
    z3.Z3_OP_OR: any,
    z3.Z3_OP_NOT: lambda a: not a[0],
    z3.Z3_OP_TO_REAL: lambda a: mpmath.mpf(a[0]),
    z3.Z3_OP_POWER: lambda a: a[0] ** a[1],
}


class Evaluator:
    """Evaluates terms under a model; buffer contents may be overridden per (function, index), and
    (function, None) gives every element no override names one default value (a sparse replay of a long
    comprehension relies on it). A default given here replaces the model's table too, so a recorded witness
    (its reads and its default) replays the same under any model; one taken from the model's else value
    during evaluation leaves the table's elements their values. Each element's value is fixed at its first
    read, so one evaluation always sees one assignment of the inputs."""

    def __init__(self, model: z3.ModelRef, overrides: dict[tuple[str, int | None], Fraction] | None = None,
                 definitions: dict[str, z3.ExprRef] | None = None):
        self.model = model
        self.overrides = overrides or {}
        self.definitions = definitions or {}   # symbol name -> the term whose value it has (proved equal)
        self.reads: dict[tuple[str, int | None], object] = {}   # buffer element (None: the default) -> value
        # term id -> (term, value): a reduction nested in another's body (a mean inside a variance) is the
        # same term at every outer index and is expanded once. The term is kept so its id is never reused.
        self.memo: dict[int, tuple[z3.ExprRef, object]] = {}
        self._tables: dict[str, tuple[set[int], Fraction | None]] = {}
        self._given_defaults = {name for name, index in self.overrides if index is None}
        self.expanded = 0   # terms expanded one by one so far (MAX_TOTAL_TERMS)

    def value(self, term: z3.ExprRef) -> object:
        hit = self.memo.get(term.get_id())
        if hit is not None and hit[0].eq(term):
            return hit[1]
        result = self._value(term)
        self.memo[term.get_id()] = (term, result)
        return result

    def _value(self, term: z3.ExprRef) -> object:
        if z3.is_bv(term) or z3.is_bool(term):
            scan = _scan(term)
            if z3.is_bv(term) and scan.folds:   # an argmax: folded here
                term = z3.substitute(term, *[(f, z3.BitVecVal(self._arg_fold(f), 64)) for f in scan.folds])
                scan = _scan(term)
            if z3.is_bv(term) and scan.reals:
                term = self._decide_real_tests(term)
                scan = _scan(term)
            if z3.is_bv(term) or not scan.reals:
                v = self.model.eval(self._with_integer_reads(term, scan.reads), model_completion=True)
                return v.as_long() if z3.is_bv_value(v) else z3.is_true(v)
        if z3.is_rational_value(term):
            frac = term.as_fraction()
            return mpmath.mpf(frac.numerator) / frac.denominator
        kind = term.decl().kind()
        if kind == z3.Z3_OP_ITE:
            return self.value(term.arg(1)) if self.value(term.arg(0)) else self.value(term.arg(2))
        if kind == z3.Z3_OP_BV2INT:
            return self.value(term.arg(0))
        if is_comprehension(term):
            return self._comprehension(term)
        if kind == z3.Z3_OP_UNINTERPRETED:
            return self._uninterpreted(term)
        if kind not in REAL_OPS:
            raise NotConcrete(f"operator {term.decl()}")
        try:
            return REAL_OPS[kind]([self.value(a) for a in term.children()])
        except ZeroDivisionError as exc:
            raise NotConcrete("division by zero") from exc

    def _with_integer_reads(self, term: z3.ExprRef, reads: list[z3.ExprRef]) -> z3.ExprRef:
        """`term` with each integer input element it reads (`reads`, a gathered index: `targets[r]`) replaced by
        its value: the override given for that element (a witness's inputs), else the model's. Each is recorded,
        signed, so a witness lists it for the concrete interpreter."""
        pairs = []
        for t in reads:
            index = self.value(t.arg(0))
            if not isinstance(index, int):
                continue
            key, width = (t.decl().name(), index), t.size()
            if key in self.overrides:
                v = int(self.overrides[key]) % (1 << width)
            else:
                v = self.model.eval(t.decl()(z3.BitVecVal(index, 64)), model_completion=True).as_long()
            self.reads[key] = v - (1 << width) if v >> (width - 1) else v
            pairs.append((t, z3.BitVecVal(v, width)))
        return z3.substitute(term, *pairs) if pairs else term

    def _decide_real_tests(self, term: z3.BitVecRef) -> z3.BitVecRef:
        """A bit-vector term that depends on reals only through comparisons of reals (an integer `selp` on a
        float test): each comparison decided here, on exact reals, so that the model (which knows nothing
        of exp or ln 2) only evaluates bit-vector operations."""
        tests = [t for t in subterms(term) if _real_test(t)]
        return z3.substitute(term, *[(t, z3.BoolVal(bool(self.value(t)))) for t in tests]) if tests else term

    def _comprehension(self, term: z3.ExprRef) -> object:
        """Expand a Sum/Prod/MaxFrom/MinFrom with concrete bounds, term by term (witnesses have concrete threads);
        `value` memoizes it."""
        return self._expand(term)

    def _expand(self, term: z3.ExprRef) -> object:
        args = term.children()
        plain = term.decl() in (SUM, PROD)   # no initial value
        init = None if plain else self.value(args[0])
        lo, hi, lam = (args if plain else args[1:])
        lo, hi = self.value(lo), self.value(hi)
        values, copies = None, []
        if hi - lo > SPARSE_FROM:
            values, copies = self._pieces(lam, lo, hi)
        if values is None:
            if hi - lo > MAX_EXPANDED_TERMS:
                raise NotConcrete(f"a reduction over {hi - lo} terms")
            self.expanded += max(0, hi - lo)
            if self.expanded > MAX_TOTAL_TERMS:
                raise NotConcrete(f"reductions over more than {MAX_TOTAL_TERMS} terms in all")
            # simplified once instantiated: index conditions over concrete values fold to constants (a tiled
            # kernel's guards), instead of being evaluated one model query at a time; simplification keeps the value
            values = [self.value(z3.simplify(body_at(lam, z3.BitVecVal(j, 64))))
                      for j in range(lo, max(lo, hi))]
        if term.decl() == SUM:   # the copies of one term: one product (of a Prod: one power)
            return mpmath.fsum([*values, *(v * n for v, n in copies)])
        if term.decl() == PROD:
            return mpmath.fprod([*values, *(v ** n for v, n in copies)])
        pick = max if term.decl() == MAX_FROM else min
        return pick([init, *values, *(v for v, _ in copies)])

    def _arg_fold(self, term: z3.ExprRef) -> int:
        """An ArgMaxFrom-like fold (`semantics.arg_extrema`) with concrete bounds, position by position (lane l of
        step t is position d·t + l); a long one only at each lane's special steps and at the first and last of
        its others (which all have one value): every value's first and last position are among them."""
        v0, i0, base, count, *lams = term.children()
        n, j = self.value(count), z3.FreshConst(z3.BitVecSort(64), "replay!t")
        values = []
        for lane, lam in enumerate(lams):
            body = body_at(lam, j)
            values += [(len(lams) * t + lane, self.value(z3.simplify(z3.substitute(body, (j, z3.BitVecVal(t, 64))))))
                       for t in self._fold_steps(body, j, n)]
        return arg_extrema.fold(arg_extrema.kind_of(term).name, self.value(v0), self.value(i0), self.value(base),
                                sorted(values, key=lambda pv: pv[0]))

    def _fold_steps(self, body: z3.ExprRef, j: z3.BitVecRef, n: int) -> list[int]:
        """The steps of a fold over [0, n) to evaluate: all of them, or (a long fold whose body allows it,
        `sparse`) the special ones and the first and last of the others, the others' inputs at their default."""
        special = None
        if n > SPARSE_FROM:
            special = sparse.special_indices(body, j, 0, n, lambda t: self._concrete(t, j), self._explicit)
        if special is None:
            if n > MAX_EXPANDED_TERMS:
                raise NotConcrete(f"a fold over {n} steps")
            return list(range(n))
        taken = set(special)
        others = [next((t for t in range(lo, hi, step) if t not in taken), None)
                  for lo, hi, step in ((0, n, 1), (n - 1, -1, -1))]
        if others[0] is not None:
            for read in sparse.reads_of(body, j):   # every other step reads the default: a witness names it
                default = (read.decl().name(), None)
                self.overrides.setdefault(default, self._table(read.decl())[1])
                self.reads[default] = self.overrides[default]
        return sorted(taken | {t for t in others if t is not None})

    def _concrete(self, t: z3.ExprRef, j: z3.BitVecRef) -> z3.ExprRef:
        """`t` with the witness's values put in for its free symbols other than j."""
        pairs = [(c, self.model.eval(c, model_completion=True)) for c in sparse.free_symbols(t, j)]
        return z3.simplify(z3.substitute(t, *pairs) if pairs else t)

    def _pieces(self, lam: z3.QuantifierRef, lo: int, hi: int) -> tuple[list | None, list[tuple[object, int]]]:
        """(the values of terms taken one by one, [(a value, how many terms have it)]) of a long comprehension,
        cut where its index guards change (`sparse.guard_pieces`) and each piece replayed sparsely; None when
        the body allows neither."""
        j = z3.FreshConst(z3.BitVecSort(64), "replay!j")
        body = body_at(lam, j)

        def concrete(t: z3.ExprRef) -> z3.ExprRef:
            return self._at_model(t, j)

        pieces = sparse.guard_pieces(body, j, lo, hi, concrete)
        if pieces is None:
            return None, []
        values, copies = [], []
        for start, end, truth in pieces:
            piece = z3.substitute(body, *[(g, z3.BoolVal(v)) for g, v in truth]) if truth else body
            if end - start <= SPARSE_FROM:
                values += [self.value(z3.simplify(z3.substitute(piece, (j, z3.BitVecVal(k, 64)))))
                           for k in range(start, end)]
                continue
            special, other = self._sparse(piece, j, start, end, concrete)
            if special is None:
                return None, []
            values += special
            copies += [other] if other[1] else []
        return values, copies

    def _sparse(self, body: z3.ExprRef, j: z3.BitVecRef, lo: int, hi: int,
                concrete: Callable) -> tuple[list | None, tuple[object, int]]:
        """(the special terms' values, (the value every other term has, how many others)) of the terms of
        `body` at j in [lo, hi); None when the body does not allow it (`semantics.sparse`)."""
        special = sparse.special_indices(body, j, lo, hi, concrete, self._explicit)
        if special is None:
            return None, (None, 0)
        for read in sparse.reads_of(body, j):   # every other element: the default (the model's else value)
            self.overrides.setdefault((read.decl().name(), None), self._table(read.decl())[1])
        template = self._at_model(body, j, bit_vectors_only=True)
        values = [self.value(z3.simplify(z3.substitute(template, (j, z3.BitVecVal(k, 64))))) for k in special]
        others = hi - lo - len(special)
        if not others:
            return values, (None, 0)
        other = sparse.other_index(special, lo, hi)
        value = self.value(z3.simplify(z3.substitute(template, (j, z3.BitVecVal(other, 64)))))
        for read in sparse.reads_of(body, j):   # the result depends on each input's default: a witness names it
            default = (read.decl().name(), None)
            self.reads[default] = self.overrides[default]
        return values, (value, others)

    def _at_model(self, term: z3.ExprRef, j: z3.BitVecRef, bit_vectors_only: bool = False) -> z3.ExprRef:
        """`term` with its symbols but j at their model values, simplified. With `bit_vectors_only`, only the
        bit-vector ones (a witness's thread and block ids), as `value` evaluates them (a bit-vector term goes to
        the model): each of the thousands of terms a sparse comprehension replays then has numeral indices,
        instead of one walk and one model query per index."""
        pairs = [(c, self.model.eval(c, model_completion=True)) for c in sparse.free_symbols(term, j)
                 if z3.is_bv(c) or not bit_vectors_only]
        return z3.simplify(z3.substitute(term, *pairs) if pairs else term)

    def _explicit(self, decl: z3.FuncDeclRef) -> list[int] | None:
        """The elements of an input with a value of their own (the model's table, the overrides); None when the
        rest have no one default (the model's else is not a constant and no default is given)."""
        points, default = self._table(decl)
        if default is None and (decl.name(), None) not in self.overrides:
            return None
        if decl.name() in self._given_defaults:
            points = set()
        return sorted(points | {i for (n, i) in self.overrides if n == decl.name() and i is not None})

    def _table(self, decl: z3.FuncDeclRef) -> tuple[set[int], Fraction | None]:
        """The model's explicit elements of an input and its constant else value (None if not constant)."""
        if decl.name() not in self._tables:
            interp = self.model.get_interp(decl) if decl in self.model.decls() else None
            if interp is None:   # unconstrained: model completion gives every element one value
                default = self.model.eval(decl(z3.BitVecVal(0, decl.domain(0).size())), model_completion=True)
                self._tables[decl.name()] = (set(), Fraction(_number_fraction(default)))
            else:
                points = {interp.entry(i).arg_value(0).as_long() for i in range(interp.num_entries())}
                other = interp.else_value()
                constant = other is not None and (z3.is_rational_value(other) or z3.is_algebraic_value(other))
                self._tables[decl.name()] = (points, Fraction(_number_fraction(other)) if constant else None)
        return self._tables[decl.name()]

    def _uninterpreted(self, term: z3.ExprRef) -> object:
        name = term.decl().name()
        if term.num_args() == 0:
            if term.eq(NEG_INF):
                raise NotConcrete("-inf (a masked lane's padding) is not a real")
            if name in EXACT_CONSTANTS:
                return EXACT_CONSTANTS[name]()
            if name in self.definitions:
                return self.value(self.definitions[name])
            v = self.model.eval(term, model_completion=True)
            return _number(v)
        if name in IDEAL_FUNCTIONS:
            arg = self.value(term.arg(0))
            try:
                result = IDEAL_FUNCTIONS[name].exact(arg)
            except (ValueError, ZeroDivisionError) as exc:
                raise NotConcrete(f"{name}({arg})") from exc
            if isinstance(result, mpmath.mpc):
                raise NotConcrete(f"{name}({arg}) is not real")
            return result
        index = self.value(term.arg(0))
        key = (name, index)
        if key not in self.overrides:
            default = (name, None)
            if default in self.overrides and (name in self._given_defaults or index not in self._table(term.decl())[0]):
                self.overrides[key] = self.overrides[default]
            else:
                self.overrides[key] = Fraction(_number_fraction(self.model.eval(term, model_completion=True)))
        value = self.overrides[key]
        self.reads[key] = value
        return mpmath.mpf(value.numerator) / value.denominator if isinstance(value, Fraction) else value


def _number_fraction(v: z3.ExprRef) -> Fraction:
    if z3.is_rational_value(v):
        return Fraction(v.as_fraction())
    if z3.is_algebraic_value(v):
        return Fraction(v.approx(40).as_fraction())
    if z3.is_bv_value(v):
        return Fraction(v.as_long())
    raise NotConcrete(f"value {v}")


def _number(v: z3.ExprRef) -> object:
    frac = _number_fraction(v)
    return mpmath.mpf(frac.numerator) / frac.denominator


def _real_test(t: z3.ExprRef) -> bool:
    return z3.is_bool(t) and z3.is_app(t) and any(z3.is_real(c) for c in t.children())


class _Scan(NamedTuple):
    folds: list[z3.ExprRef]   # argmax/argmin folds (`arg_extrema`)
    reals: bool               # a real-valued subterm
    reads: list[z3.ExprRef]   # integer input reads: a unary bit-vector function of a 64-bit index


def _scan(term: z3.ExprRef) -> _Scan:
    """What `_value` asks of a Boolean or bit-vector term, in one walk over z3's raw ASTs: a witness's replay
    evaluates tens of thousands of read indices (one per element of each sparse comprehension), and three
    walks wrapping every node were most of a refutation's time (100 s of 103 on a 12,500-term row)."""
    ref, ctx = term.ctx_ref(), term.ctx
    folded = _folded()
    folds, reals, reads = [], False, []
    for _, ast in nodes(term):
        kind = z3.Z3_get_ast_kind(ref, ast)
        if kind not in (z3.Z3_APP_AST, z3.Z3_VAR_AST):
            continue
        sort = z3.Z3_get_sort(ref, ast)
        reals = reals or z3.Z3_get_sort_kind(ref, sort) == z3.Z3_REAL_SORT
        if kind != z3.Z3_APP_AST:
            continue
        decl = z3.Z3_get_app_decl(ref, ast)
        if z3.Z3_get_ast_id(ref, z3.Z3_func_decl_to_ast(ref, decl)) in folded:
            folds.append(wrap(ast, ctx))
        elif z3.Z3_get_decl_kind(ref, decl) == z3.Z3_OP_UNINTERPRETED and z3.Z3_get_app_num_args(ref, ast) == 1 \
                and z3.Z3_get_sort_kind(ref, sort) == z3.Z3_BV_SORT and _is_index64(ref, decl):
            reads.append(wrap(ast, ctx))
    return _Scan(folds, reals, reads)


@functools.cache
def _folded() -> frozenset[int]:
    return frozenset(d.get_id() for d in arg_extrema.DECLS)


def _is_index64(ref, decl) -> bool:
    domain = z3.Z3_get_domain(ref, decl, 0)
    return z3.Z3_get_sort_kind(ref, domain) == z3.Z3_BV_SORT and z3.Z3_get_bv_sort_size(ref, domain) == 64


def differ(a: object, b: object) -> bool:
    """Two exact values differ beyond the 50-digit evaluation's noise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a != b
    scale = max(abs(a), abs(b), mpmath.mpf(1))
    return abs(a - b) > scale * mpmath.mpf(10) ** -30


def as_json_number(v: object) -> float | int | bool:
    if isinstance(v, bool | int):
        return v
    if isinstance(v, Fraction):
        return float(v)
    return float(v)
