"""Heuristic prover: how a kernel reduction's index maps onto the reference's (φ for the matcher).

Untrusted. It looks for one input buffer read in both terms, `F(idx_t(m))` in the target and `F(idx_s)` in
the source, where idx_t moves by a constant stride s per step of m, and solves idx_t(m) = idx_s for m:
m = (idx_s - idx_t(0)) / s. The matcher proves or rejects the proposal.

A term that reads the same buffer more than once (x[c] · x[c + n/2]) offers one proposal per pairing of a
target read with a source read, and only some pairings are right: `candidates` lists them all, in a fixed
order, for the search to try (orchestrator/search.py); `propose` is the first, for callers without one.
"""

from __future__ import annotations

from collections.abc import Iterator

import z3

from orchestrator.provers.bounds import _constant_step
from semantics.ptx.machine import simplify
from semantics.terms import mentions, subterms


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
    """The pairings' terms for target_var, first pairing first, without repeats."""
    found: list[z3.BitVecRef] = []
    for term in _pairings(source, target, target_var):
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
