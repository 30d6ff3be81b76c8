"""A long guarded Sum replays without enumerating its terms (semantics/sparse.py guard_pieces): the range is
cut where the index guards change (a Triton mask, a strided loop's bound), each piece replayed from its
special terms, and the value is the one term-by-term expansion gives; a guard that is no line in j (it wraps,
or reads an input) leaves the term-by-term expansion."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3

from semantics import replay
from semantics.comprehension import sum_over
from semantics.replay import Evaluator
from semantics.sparse import guard_pieces

X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
J = z3.BitVec("j", 64)
TID, N = z3.BitVec("tid", 64), z3.BitVec("n", 64)


def _model(**values: int) -> z3.ModelRef:
    solver = z3.Solver()
    solver.add(*[z3.BitVec(k, 64) == v for k, v in values.items()])
    assert solver.check() == z3.sat
    return solver.model()


def _strided(width: int = 64) -> z3.ArithRef:
    """Σ_j [tid + 256·j < n] x(tid + 256·j) over j < 400: one thread's share of a row, its tail masked."""
    col = TID + 256 * J
    guard = z3.ULT(col, N) if width == 64 else z3.ULT(z3.Extract(width - 1, 0, col), z3.Extract(width - 1, 0, N))
    return sum_over(0, 400, J, z3.If(guard, X(col), z3.RealVal(0)))


OVERRIDES = {("x", 3): Fraction(7), ("x", 259): Fraction(-2), ("x", 99_843): Fraction(5), ("x", None): Fraction(1)}


@pytest.mark.parametrize("tid, n, width", [(3, 100_000, 64), (3, 100_000, 32), (200, 1000, 64), (7, 2_000_000, 32)])
def test_a_guarded_sum_replays_in_pieces_as_expanded(monkeypatch, tid: int, n: int, width: int):
    term = _strided(width)
    model = _model(tid=tid, n=n)
    with monkeypatch.context() as m:
        m.setattr(replay, "MAX_EXPANDED_TERMS", 100)          # no expansion of 400 terms: the pieces answer
        fast = Evaluator(model, dict(OVERRIDES)).value(term)
    monkeypatch.setattr(replay, "SPARSE_FROM", 1 << 20)      # every term on its own
    slow = Evaluator(model, dict(OVERRIDES)).value(term)
    assert fast == slow
    assert fast == sum(OVERRIDES.get(("x", tid + 256 * k), 1) for k in range(400) if tid + 256 * k < n)


def test_the_pieces_end_where_the_guard_changes():
    model = _model(tid=3, n=100_000)
    body = z3.If(z3.ULT(TID + 256 * J, N), X(TID + 256 * J), z3.RealVal(0))

    def concrete(t):
        return z3.simplify(z3.substitute(t, (TID, model.eval(TID)), (N, model.eval(N))))
    pieces = guard_pieces(body, J, 0, 400, concrete)
    # 3 + 256·390 = 99843 < n <= 3 + 256·391: the cut is at the floor of the root and the point after it
    assert [(a, b, [v for _, v in truth]) for a, b, truth in pieces] == [(0, 390, [True]), (390, 391, [True]),
                                                                       (391, 400, [False])]


def test_a_wrapping_guard_is_no_line():
    """tid + 2^62·j wraps on [0, 8): its comparison is no line in j, so there are no pieces."""
    model = _model(tid=3, n=100_000)
    body = z3.If(z3.ULT(TID + (1 << 62) * J, N), X(TID), z3.RealVal(0))
    assert guard_pieces(body, J, 0, 8, lambda t: z3.simplify(z3.substitute(t, (TID, model.eval(TID)),
                                                                             (N, model.eval(N))))) is None


def test_a_guard_that_reads_an_input_is_no_line():
    body = z3.If(X(J) > 0, X(J), z3.RealVal(0))           # a real comparison: no bit-vector guard at all
    assert guard_pieces(body, J, 0, 100, z3.simplify) == [(0, 100, ())]
    data = z3.Function("idx", z3.BitVecSort(64), z3.BitVecSort(64))
    body = z3.If(z3.ULT(data(J), 5), X(J), z3.RealVal(0))  # an index read from an input
    assert guard_pieces(body, J, 0, 100, z3.simplify) is None


@pytest.mark.parametrize("make", [
    lambda j: 5 + 3 * j, lambda j: (j << 4) - 7, lambda j: -j + 100,
    lambda j: z3.ZeroExt(32, z3.Extract(31, 0, j) * 4 + 9), lambda j: z3.SignExt(32, z3.Extract(31, 0, j) - 20),
    lambda j: z3.ZeroExt(32, z3.Extract(31, 0, j) * (1 << 30)),                  # wraps: no line
])
def test_a_structural_line_is_the_solvers(make):
    """Read off the operations, a line agrees with the two-point line the solver proves, or there is none
    where the solver finds none (an extension of a wrapping narrower line)."""
    from semantics.sparse import _proved_line, structural
    term = make(J)
    assert structural(term, J, 0, 64) == _proved_line(term, J, 0, 64)
