"""Heuristic prover: how a kernel reduction's index maps onto the reference's (φ for the matcher).

Untrusted. It looks for one input buffer read in both terms, `F(idx_t(m))` in the target and `F(idx_s)` in
the source, where idx_t moves by a constant stride s per step of m, and solves idx_t(m) = idx_s for m:
m = (idx_s - idx_t(0)) / s. The matcher proves or rejects the proposal.

A term that reads the same buffer more than once (x[c] · x[c + n/2]) offers one proposal per pairing of a
target read with a source read, and only some pairings are right: `candidates` lists them all, in a fixed
order, for the search to try (orchestrator/search.py); `propose` is the first, for callers without one.

Where no read's index moves by a constant stride (a transposed convolution's box (icg, k) flattened to m:
its input and weight reads decode m by m / K and m % K), φ is read off two examples instead: at one
assignment of the thread's symbols, the m whose reads are the source's at j = 0 and at j = 1, each unique,
give φ(j) = m₀ + (m₁ - m₀)·j (`_by_example`, the second candidate).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import z3

from orchestrator.provers.bounds import _constant_step
from semantics.ptx.machine import simplify
from semantics.purify import purified
from semantics.terms import constants, mentions, subterms


def _applications(term: z3.ExprRef) -> list[z3.ExprRef]:
    return [t for t in subterms(term) if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED
            and t.num_args() == 1 and z3.is_bv(t.arg(0)) and not z3.is_array(t)]


MAX_CANDIDATES = 8     # pairings offered to the search; a term with more reads rarely needs a later one


def propose(key: str, source: z3.ExprRef, source_var: z3.BitVecRef | None, target: z3.ExprRef,
            target_var: z3.BitVecRef) -> z3.BitVecRef | None:
    """A term (over source_var) for target_var such that target at it equals source, or None."""
    return next(_pairings(source, target, target_var), None)


def candidates(key: str, source: z3.ExprRef, source_var: z3.BitVecRef | None, target: z3.ExprRef,
               target_var: z3.BitVecRef) -> list[z3.BitVecRef]:
    """The pairings' terms for target_var, without repeats: the first pairing, then the examples' progression,
    then the other pairings (a 3-D box's reads offer more than MAX_CANDIDATES pairings, all wrong)."""
    found: list[z3.BitVecRef] = []
    pairings = _pairings(source, target, target_var)
    for term in itertools.chain(itertools.islice(pairings, 1), _by_example(source, source_var, target, target_var),
                                pairings):
        if not any(z3.eq(term, t) for t in found):
            found.append(term)
            if len(found) == MAX_CANDIDATES:
                break
    return found


def _pairings(source: z3.ExprRef, target: z3.ExprRef, target_var: z3.BitVecRef) -> Iterator[z3.BitVecRef]:
    """m = (idx_s - idx_t(0)) / s for each target read F(idx_t(m)) and source read F(idx_s)."""
    source_reads = _applications(source)
    for app in _applications(target):
        idx_t = app.arg(0)
        if not mentions(idx_t, target_var):
            continue
        stride = _constant_step(idx_t, target_var, confirm=False)  # index offsets may wrap; the checker decides
        if not stride or stride < 0:
            continue
        base = simplify(z3.substitute(idx_t, (target_var, z3.BitVecVal(0, 64))))
        for read in source_reads:
            if read.decl() == app.decl():
                delta = read.arg(0) - base
                yield simplify(delta if stride == 1 else z3.UDiv(delta, stride))


PROPAGATE = z3.Then("simplify", "propagate-values", "simplify")
EXAMPLE_MS = 4000       # one example's query
# The values each of the thread's symbols takes in an example, tried in turn: 0 is too often an edge, and at
# 3 (block 3, thread 3 of a flat grid) a 2-D window's taps above the first row read outside the input, where
# no reference index reads the same element.
EXAMPLE_AT = (3, 1001, 100003)


def _by_example(source: z3.ExprRef, source_var: z3.BitVecRef | None, target: z3.ExprRef,
                target_var: z3.BitVecRef) -> Iterator[z3.BitVecRef]:
    """φ(j) = m₀ + (m₁ - m₀)·j where m_j is the only m < 2³² at which every read of the target names the element
    its buffer's read in the source names at j (each buffer read once on each side), the other symbols fixed."""
    mine, theirs = _applications(source), _applications(target)
    decls = [t.decl() for t in mine]
    if not theirs or len(set(map(str, decls))) != len(decls) or len(theirs) != len(mine) or \
            {str(t.decl()) for t in theirs} != set(map(str, decls)):
        return
    by_decl = {str(t.decl()): t for t in theirs}
    same = [by_decl[str(t.decl())].arg(0) == t.arg(0) for t in mine]
    symbols = [c for c in constants(z3.And(*same))
               if z3.is_bv(c) and not c.eq(target_var) and (source_var is None or not c.eq(source_var))]
    points = [_guard_point(source, source_var, symbols),
              *([c == z3.BitVecVal(at, c.size()) for c in symbols] for at in EXAMPLE_AT)]
    ms = next(filter(None, (_examples(same, fixed, source_var, target_var) for fixed in points if fixed is not None)),
              None)
    if ms is None:
        return
    if source_var is None:
        yield z3.BitVecVal(ms[0], target_var.size())
        return
    j = source_var if source_var.size() >= target_var.size() else \
        z3.ZeroExt(target_var.size() - source_var.size(), source_var)
    yield simplify(ms[0] + (ms[1] - ms[0]) * j)


def _guard_point(source: z3.ExprRef, source_var: z3.BitVecRef | None,
                 symbols: list[z3.BitVecRef]) -> list[z3.BoolRef] | None:
    """The thread's symbols fixed where the source term If(g, t, 0) reads (g holds at j = 0): a strided window's
    tap is inside the input only where its position divides, rarely at a fixed point. None: no guard, or none
    found."""
    if not (z3.is_app_of(source, z3.Z3_OP_ITE) and z3.is_rational_value(source.arg(2))):
        return None
    solver = z3.Solver()
    solver.set("timeout", EXAMPLE_MS)
    solver.add(source.arg(0), *([] if source_var is None else [source_var == 0]))
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    return [c == model.eval(c, model_completion=True) for c in symbols]


def _examples(same: list[z3.BoolRef], fixed: list[z3.BoolRef], source_var: z3.BitVecRef | None,
              target_var: z3.BitVecRef) -> list[int] | None:
    """The unique m at j = 0 and j = 1 (or at the one point, without a j) with the other symbols `fixed`."""
    ms = []
    for j in (0, 1) if source_var is not None else (0,):
        point = [] if source_var is None else [source_var == j]
        m = _unique(z3.And(*same, *fixed, *point, z3.ULT(target_var, 1 << 32)), target_var)
        if m is None:
            return None
        ms.append(m)
    return ms


def _unique(formula: z3.BoolRef, var: z3.BitVecRef) -> int | None:
    """The one value of `var` in models of `formula`, or None (none, several, or no answer in EXAMPLE_MS)."""
    # the fixed symbols' values propagated, then the divisions named: a 3-D box decoded from m (m / 27,
    # m / 9 % 3, ...) is not decided in seconds as it stands at some sizes, nor purified with the thread's
    # decoding still symbolic at others
    formula = PROPAGATE(formula).as_expr()
    solver = z3.Solver()
    solver.set("timeout", EXAMPLE_MS)
    solver.add(purified(formula))
    if solver.check() != z3.sat:
        return None
    value = solver.model().eval(var, model_completion=True)
    again = z3.Solver()
    again.set("timeout", EXAMPLE_MS)
    again.add(purified(z3.And(formula, var != value)))
    return value.as_long() if again.check() == z3.unsat else None
