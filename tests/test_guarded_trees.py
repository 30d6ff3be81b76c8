"""A loop body's tree of guarded partial sums (semantics/properties/guarded_trees.py): nvcc's hoisted row test
merged with the last column's, rewritten to one guarded summand per tap, with a kernel theorem."""

from __future__ import annotations

import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import SUM
from semantics.proof.rules import by_smt
from semantics.properties import guarded_trees
from semantics.properties.compose import close, comparison

X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
W = z3.Function("w", z3.BitVecSort(64), z3.RealSort())
J = z3.BitVec("j", 64)
OUT = z3.BitVec("o", 64)
HYP = z3.ULT(OUT, 1000)


def _tap(row: int, col: int, j: z3.BitVecRef) -> tuple[z3.BoolRef, z3.ArithRef]:
    """Tap (row, col) of a 2-row, 3-column window at output o: its inside test and its product."""
    inside = z3.And(z3.UGE(OUT, row), z3.UGE(OUT + 7, col))
    return inside, X(OUT - row + 9 * j + col) * W(3 * row + col)


def _tree(j: z3.BitVecRef, rows: int = 2) -> z3.ArithRef:
    """Row r: If(row ∧ col₂, g₀ + g₁ + t₂, If(row, g₀ + g₁, 0)) added to the rows before, as nvcc leaves it."""
    acc = z3.RealVal(0)
    for row in range(rows):
        row_ok = z3.UGE(OUT, row)
        cols = [_tap(row, c, j) for c in range(3)]
        g = [z3.If(z3.UGE(OUT + 7, c), t, 0) for c, (_, t) in enumerate(cols)]
        partial = z3.If(row_ok, acc + g[0] + g[1], acc)
        acc = z3.If(z3.Or(z3.Not(row_ok), z3.And(row_ok, z3.Not(z3.UGE(OUT + 7, 2)))), partial,
                    acc + g[0] + g[1] + cols[2][1])
    return acc


def test_a_tree_becomes_one_guarded_summand_per_tap_each_guard_a_conjunction():
    flat = guarded_trees.flattened(_tree(J))
    assert flat is not None and len(flat.children()) == 6
    for summand in flat.children():
        assert z3.is_app_of(summand, z3.Z3_OP_ITE) and z3.is_and(summand.arg(0)), summand
    solver = z3.Solver()
    solver.add(flat != _tree(J))
    assert solver.check() == z3.unsat


def test_nine_rows_of_a_3d_window_are_flattened_without_listing_their_paths():
    """A 3 x 3 x 3 window's 9 rows: each row's partial sums sit in both branches of its test, so the paths
    through the tree double with every row (over 512 to one tap); the guards are built per subterm instead."""
    tree = _tree(J, rows=9)
    flat = guarded_trees.flattened(tree)
    assert flat is not None and len(flat.children()) == 27
    for summand in flat.children():
        assert z3.is_app_of(summand, z3.Z3_OP_ITE) and z3.is_and(summand.arg(0)), summand
    solver = z3.Solver()
    solver.add(flat != tree)
    assert solver.check() == z3.unsat


def test_a_body_without_a_tree_is_left_alone():
    assert guarded_trees.flattened(z3.If(z3.UGE(OUT, 1), X(OUT), 0) + X(OUT + 1)) is None


def test_the_rewrite_comes_with_a_kernel_theorem_that_closes_the_lane():
    kernel = SUM(z3.BitVecVal(0, 64), z3.BitVecVal(64, 64), z3.Lambda([J], _tree(J)))
    new, steps = guarded_trees.rewrite(kernel, z3.Real("r"), HYP, Z3Checker(), 30.0, lambda *a: None)
    assert len(steps) == 1 and not new.eq(kernel)
    assert steps[0].equation.states(z3.Implies(HYP, new == kernel))
    # a lane whose reference is the flat form: its rewritten comparison is trivial, and closing it through
    # the step gives the theorem about the kernel's own term
    again, steps = guarded_trees.rewrite(kernel, new, HYP, Z3Checker(), 30.0, lambda *a: None)
    after = by_smt(comparison(HYP, again, new), Z3Checker(), 5.0, "the rewritten lane", "equivalence")
    closed = close(after, HYP, steps)
    assert closed is not None and closed.states(comparison(HYP, kernel, new))


def test_a_wrong_flattening_is_refused(monkeypatch):
    """A tactic that drops a tap (a wrong rewrite) gets no step: its premise is refuted."""
    real = guarded_trees._joined

    def dropping(paths):
        return z3.Sum(*real(paths).children()[1:])
    monkeypatch.setattr(guarded_trees, "_joined", dropping)
    kernel = SUM(z3.BitVecVal(0, 64), z3.BitVecVal(64, 64), z3.Lambda([J], _tree(J)))
    new, steps = guarded_trees.rewrite(kernel, z3.Real("r"), HYP, Z3Checker(), 30.0, lambda *a: None)
    assert steps == [] and new.eq(kernel)
