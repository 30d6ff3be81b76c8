"""What the inputs' value-range preconditions decide about integer terms of the reference.

A task may state `[tensors] idx = { range = [lo, hi] }` (`semantics/preconditions.py`): every admitted input
has each element of `idx` in [lo, hi], and the result lists the assumption. Under it some integer terms have
one value for every admitted input: nll_loss's `target != ignore_index` (-100, outside [0, C - 1]) is true,
so its count of counted targets is the batch size. Torch computes that value; a term that kept the test
would make the reference depend on inputs the task excludes, and no kernel that relies on the
precondition could be proved equal to it.

Definitions (signed integer bounds, each a theorem of interval arithmetic):
* `interval(t)`: a constant is its value; an element of a ranged input (sign-extended or not) its stated
  range; an If the hull of its branches' intervals (its value is one of theirs). Else unbounded.
* `settled(a ⋈ b)` for ⋈ among =, ≠, <, ≤, >, ≥ (signed) with both intervals bounded: true when every pair
  of values in them satisfies ⋈, false when none does (for <: hi(a) < lo(b), resp. lo(a) ≥ hi(b)); else the
  comparison unchanged.
"""

from __future__ import annotations

import z3

Ranges = dict[str, tuple[int, int]]
Interval = tuple[int, int] | None


def interval(ranges: Ranges, term: z3.ExprRef) -> Interval:
    """Signed bounds of every value `term` can take under the preconditions, or None."""
    if z3.is_app(term) and term.decl().kind() == z3.Z3_OP_SIGN_EXT:
        return interval(ranges, term.arg(0))
    if z3.is_bv_value(term):
        return term.as_signed_long(), term.as_signed_long()
    if z3.is_app_of(term, z3.Z3_OP_ITE):
        a, b = interval(ranges, term.arg(1)), interval(ranges, term.arg(2))
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if z3.is_app(term) and term.num_args() == 1 and z3.is_bv(term) and \
            term.decl().kind() == z3.Z3_OP_UNINTERPRETED:   # an input's contents, never bvneg or extract
        return ranges.get(term.decl().name())
    return None


def _less(a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    return True if a[1] < b[0] else False if a[0] >= b[1] else None


def _at_most(a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    return True if a[1] <= b[0] else False if a[0] > b[1] else None


def _equal(a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    if a[0] == a[1] == b[0] == b[1]:
        return True
    return False if a[1] < b[0] or b[1] < a[0] else None


DECIDE = {   # a signed comparison's answer for all values in two intervals: True, False or None (it depends)
    z3.Z3_OP_SLT: _less,
    z3.Z3_OP_SLEQ: _at_most,
    z3.Z3_OP_SGT: lambda a, b: _less(b, a),
    z3.Z3_OP_SGEQ: lambda a, b: _at_most(b, a),
    z3.Z3_OP_EQ: _equal,
    z3.Z3_OP_DISTINCT: lambda a, b: None if _equal(a, b) is None else not _equal(a, b),
}


def settled(ranges: Ranges, comparison: z3.BoolRef) -> z3.BoolRef:
    """The comparison as the constant it is for every admitted input, when its operands' intervals decide
    it; else unchanged."""
    if not ranges or not z3.is_app(comparison) or comparison.decl().kind() not in DECIDE or \
            comparison.num_args() != 2 or not z3.is_bv(comparison.arg(0)):
        return comparison
    a, b = (interval(ranges, t) for t in comparison.children())
    answer = None if a is None or b is None else DECIDE[comparison.decl().kind()](a, b)
    return comparison if answer is None else z3.BoolVal(answer)
