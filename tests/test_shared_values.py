"""Resolving shared reads (`semantics.properties.shared_values`): placeholders under a binder, and reads that a
store of their own barrier interval may have changed.

A read in a loop body (`memory._interval_read`) is f(reader coordinates, byte offset); the loop's summary puts
it inside a comprehension over the iteration, where its offset speaks of the bound variable. z3.substitute
does not match such an application, so before the resolver replaced them as macros they stayed placeholders
(the task was then unknown, never wrong); these tests pin that they are replaced, at the right offsets.
"""

from __future__ import annotations

import z3

from semantics.canonical import Normalizer
from semantics.comprehension import SUM, sum_over
from semantics.properties.shared_values import _substitute, unforwarded_intervals
from semantics.ptx.state import Access
from semantics.terms import subterms

BV = z3.BitVecSort(64)
CTA, TID, OFFSET = z3.BitVec("cta", 64), z3.BitVec("tid", 64), z3.BitVec("offset", 64)
F = z3.Function("shared_at!s!1!4!Real", BV, BV, BV, z3.RealSort())
X = z3.Function("x", BV, z3.RealSort())


def _pairs() -> list:
    """f(cta, tid, o) := x[cta * 256 + o / 4] (the thread o / 4 of the block stored it)."""
    return [(F(CTA, TID, OFFSET), 2 * X(CTA * 256 + z3.LShR(OFFSET, 2)))]


def _mentions_f(term: z3.ExprRef) -> bool:
    return any(z3.is_app(t) and t.decl().name() == F.name() for t in subterms(term))


def test_a_placeholder_under_a_binder_is_replaced_at_its_own_offset() -> None:
    j = z3.BitVec("j", 64)
    term = sum_over(0, 256, j, F(CTA, TID, 4 * j)) + F(CTA, TID, 8)
    resolved = _substitute(term, _pairs(), Normalizer())
    assert not _mentions_f(resolved)
    expected = sum_over(0, 256, j, 2 * X(CTA * 256 + z3.LShR(4 * j, 2))) + 2 * X(CTA * 256 + 2)
    solver = z3.Solver()
    solver.add(resolved != expected)
    assert solver.check() == z3.unsat


def test_the_bound_variable_is_not_captured() -> None:
    """A value holding a comprehension of its own keeps its own bound variable apart from the reader's."""
    j, r = z3.BitVec("j", 64), z3.BitVec("r", 64)
    value = sum_over(0, 4, r, X(z3.LShR(OFFSET, 2) + r))
    term = sum_over(0, 8, j, F(CTA, TID, 4 * j))
    resolved = _substitute(term, [(F(CTA, TID, OFFSET), value)], Normalizer())
    assert not _mentions_f(resolved)
    body = resolved.arg(2) if resolved.decl() == SUM else None
    assert body is not None
    at_3 = z3.simplify(z3.substitute_vars(body.body(), z3.BitVecVal(3, 64)))
    inner = sum_over(0, 4, r, X(3 + r))
    solver = z3.Solver()
    solver.add(at_3 != inner)
    assert solver.check() == z3.unsat


def _access(kind: str, loops: tuple, phase: int) -> Access:
    return Access(kind, "shared", "s", z3.BitVecVal(0, 64), 4, 4, (), z3.BoolVal(True), loops, 10, None, phase,
                  None)


def test_a_store_of_the_reads_own_interval_in_or_after_a_loop_makes_it_opaque() -> None:
    """A read of interval 2 of buffer s stays opaque exactly when the interval is among these."""
    def opaque(*accesses: Access) -> bool:
        return ("s", 2) in unforwarded_intervals(list(accesses))
    assert opaque(_access("store", (("loop", "k"),), 2))
    assert opaque(_access("atomic", (), 2))
    assert not opaque(_access("store", (), 2))        # forwarded by symbolic execution
    assert not opaque(_access("store", (("loop", "k"),), 1))   # an earlier interval
