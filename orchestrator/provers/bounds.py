"""Heuristic prover: candidate iteration bounds for a loop, from the comparisons that keep it running.

Untrusted. For each comparison in the back-edge condition whose difference of sides moves by a constant
c per iteration (d(k) = d0 + c·k), it proposes the first k at which the sign of d flips, read as signed
and as unsigned 64-bit integers. The checker decides which, if any, is a real bound.
"""

from __future__ import annotations

import z3

from semantics.ptx.machine import simplify
from semantics.terms import constants, subterms

COMPARISONS = {z3.Z3_OP_SLEQ, z3.Z3_OP_SLT, z3.Z3_OP_SGEQ, z3.Z3_OP_SGT, z3.Z3_OP_ULEQ, z3.Z3_OP_ULT,
               z3.Z3_OP_UGEQ, z3.Z3_OP_UGT, z3.Z3_OP_EQ}


def _atoms(term: z3.ExprRef) -> list[z3.ExprRef]:
    return [t for t in subterms(term) if z3.is_app(t) and t.decl().kind() in COMPARISONS and z3.is_bv(t.arg(0))]


def _signed(value: int, width: int) -> int:
    return value - (1 << width) if value >= 1 << (width - 1) else value


def _constant_step(d: z3.BitVecRef, k: z3.BitVecRef, confirm: bool = True) -> int | None:
    """The constant c with d(k+1) - d(k) = c for every k and every thread, if there is one. The simplifier
    does not always fold it (it keeps bit concatenations), so guess it at one point and (with `confirm`)
    ask the solver; without, the guess is returned as it is, for callers whose proposals are checked."""
    delta = z3.substitute(d, (k, k + 1)) - d
    consts = [c for c in constants(delta) if z3.is_bv(c)]
    guess = simplify(z3.substitute(delta, *[(c, z3.BitVecVal(0, c.size())) for c in consts]) if consts else delta)
    if not z3.is_bv_value(guess):
        return None
    if not confirm:
        return _signed(guess.as_long(), guess.size())
    solver = z3.Solver()
    solver.set("timeout", 2000)
    solver.add(delta != guess)
    if solver.check() != z3.unsat:
        return None
    return _signed(guess.as_long(), guess.size())


def candidates(key: str, loop) -> list[z3.BitVecRef]:
    k = loop.k
    stay = z3.Or(loop.stay) if loop.stay else z3.BoolVal(False)
    bounds = [z3.BitVecVal(0, 64)]
    for atom in _atoms(stay):
        d = atom.arg(0) - atom.arg(1)
        d0 = simplify(z3.substitute(d, (k, z3.BitVecVal(0, 64))))
        c = _constant_step(d, k)
        if not c:
            continue
        w = d0.size()
        for extend in (z3.SignExt, z3.ZeroExt):
            start = extend(64 - w, d0) if w < 64 else d0
            distance = -start if c > 0 else start
            bounds.append(simplify(z3.If(distance <= 0 if extend is z3.SignExt else distance == 0,
                                            z3.BitVecVal(0, 64), z3.UDiv(distance + (abs(c) - 1), abs(c)))))
            bounds.append(simplify(z3.UDiv(distance, abs(c)) + 1))
    return bounds
