"""Index divisions taken apart (`semantics/properties/divisions.py`): a reference's e / C and e % C of an output
index the kernel divided itself are replaced through the kernel's own quotient, only once that split is proved."""

import z3

from lean_pool.checker import Z3Checker
from orchestrator.provers.inverse import split
from semantics import purify
from semantics.properties import divisions
from semantics.terms import subterms

C = 4095
IDX = z3.BitVec("idx", 32)                      # the kernel's 32-bit thread index
E = z3.ZeroExt(32, IDX)                          # the output element it stores, as the reference indexes it
X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())


def _rewrite(term: z3.ExprRef, kernel: z3.ExprRef, bound: int) -> tuple[z3.ExprRef, list]:
    log = []
    out, _steps = divisions.rewrite(term, z3.ULT(IDX, bound), split, Z3Checker(), 30.0,
                                    lambda ob, o: log.append(o), {}, "t", kernel)
    return out, log


def _divides(term: z3.ExprRef) -> bool:
    return any(z3.is_app(t) and t.decl().kind() in purify.DIVISIONS for t in subterms(term))


def test_the_reference_division_goes_through_the_kernel_quotient():
    kernel = X(z3.SignExt(32, (IDX / C)) * 16773120 + z3.SignExt(32, IDX - C * (IDX / C)))
    reference = X(z3.UDiv(E, C) * 16773120 + z3.URem(E, C))
    rewritten, _ = _rewrite(reference, kernel, 524160)
    assert not _divides(rewritten)                         # both sides now read the one SDiv atom
    solver = z3.Solver()
    solver.add(z3.ULT(IDX, 524160), rewritten != reference)
    assert solver.check() == z3.unsat


def test_a_quotient_that_does_not_split_the_index_is_not_taken():
    # the kernel's idx / C is wrong for a negative idx read as unsigned: with idx up to 2^32, no split is proved
    kernel = X(z3.SignExt(32, (IDX / C)))
    reference = X(z3.UDiv(E, C))
    rewritten, _ = _rewrite(reference, kernel, 2 ** 32 - 1)
    assert z3.eq(rewritten, reference)
    other = X(z3.SignExt(32, (IDX / (C + 1))))       # a quotient by another divisor is no candidate
    assert divisions.through_quotients(other, E, C) == []
