"""Rewritten lanes closed through kernel rules (issue 14): the rules the tactics' equalities are restated with
(`divide_by_constant`, `reindex_lanes` of Sums, MaxFroms and MinFroms, `unroll`, `split_range` of a Prod, `sym` and
`substitute_under` under a hypothesis), each proving its theorem and refusing tampered inputs (a swapped or
repeated bijection, a wrong range split, a split of another dividend); `compose.close` refusing a step whose
equation does not match; and examples whose every lane is now stated exactly by a theorem."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3

from lean_pool.checker import Z3Checker
from orchestrator.job import PROVERS
from orchestrator.pipeline import prepare
from semantics import verdict
from semantics.comprehension import MAX_FROM, MIN_FROM, PROD, SUM, max_over, min_over, prod_over, sum_over
from semantics.proof import Refused, rules, sums
from semantics.proof.indices import defines, divide_by_constant
from semantics.properties import compose, divisions, prefix_proofs
from semantics.properties.matched_sums import reindex_sum

CHECK = Z3Checker()
T = 10.0
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
a = z3.Array("a", z3.BitVecSort(64), z3.RealSort())
n, j, i = z3.BitVecs("n j i", 64)
e, c, r = z3.BitVecs("e c r", 64)
H = z3.And(z3.ULT(r, 300), z3.ULT(c, 1000), e == 300 * c + r)    # the kernel computed e = 300·c + r


def smt(claim: z3.BoolRef):
    return rules.by_smt(claim, CHECK, T, "test", "test")


def test_divide_by_constant_turns_a_proved_split_into_the_quotient_and_the_remainder():
    split = smt(z3.Implies(H, defines(e, 300, c, r)))
    assert divide_by_constant(z3.UDiv(e, 300), c, r, split).states(z3.Implies(H, c == z3.UDiv(e, 300)))
    assert divide_by_constant(z3.URem(e, 300), c, r, split).states(z3.Implies(H, r == z3.URem(e, 300)))


def test_divide_by_constant_refuses_a_split_of_other_terms_or_a_division_it_does_not_know():
    split = smt(z3.Implies(H, defines(e, 300, c, r)))
    with pytest.raises(Refused):   # the split is about q = c, not c + 1
        divide_by_constant(z3.UDiv(e, 300), c + 1, r, split)
    with pytest.raises(Refused):   # another divisor
        divide_by_constant(z3.UDiv(e, 301), c, r, split)
    with pytest.raises(Refused):   # not a division
        divide_by_constant(e * 300, c, r, split)
    with pytest.raises(Refused):   # a signed division is not what `defines` explains
        divide_by_constant(e / 300, c, r, split)
    with pytest.raises(Refused):   # without r < N the split is not unique, so it is never proved
        smt(z3.Implies(H, defines(e, 300, c - 1, r + 300)))


def test_the_division_tactic_refuses_a_wrong_split_and_closes_a_right_one():
    goal = compose.comparison(H, a[c], a[z3.UDiv(e, 300)])
    wrong, steps = divisions.rewrite(a[z3.UDiv(e, 300)], H, lambda *_: (z3.BitVecVal(0, 64), e), CHECK, T,
                                     lambda *_: None, {}, "k")
    assert steps == [] and wrong.eq(a[z3.UDiv(e, 300)])
    divided, steps = divisions.rewrite(a[z3.UDiv(e, 300)], H, lambda *_: (c, r), CHECK, T, lambda *_: None, {}, "k")
    assert divided.eq(a[c]) and len(steps) == 1
    claim = smt(compose.comparison(H, a[c], divided))
    closed = compose.close(claim, H, [compose.Step(a[c], before, eq) for before, eq in steps])
    assert closed is not None and closed.states(goal)


def _lanes(phis):
    return tuple((j, a[phi], phi) for phi in phis)


def test_reindex_lanes_proves_an_unrolled_sum_and_refuses_a_repeated_or_missing_lane():
    target = sum_over(0, n, j, a[2 * j] + a[2 * j + 1])
    source = SUM(z3.BitVecVal(0, 64), 2 * n, z3.Lambda([i], a[i]))
    under = z3.ULT(n, 1 << 20)
    psi = ((i, z3.UDiv(i, 2)), (i, z3.UDiv(i, 2)))
    theorem = sums.reindex_lanes(source, target, _lanes([2 * j, 2 * j + 1]), psi, CHECK, T, under)
    assert theorem.states(z3.Implies(under, source == target))
    with pytest.raises(Refused):   # a lane repeated: not injective (and the body no longer the lanes' sum)
        sums.reindex_lanes(source, sum_over(0, n, j, a[2 * j] + a[2 * j]), _lanes([2 * j, 2 * j]), psi, CHECK, T,
                           under)
    with pytest.raises(Refused):   # one lane dropped: the odd elements are not hit
        sums.reindex_lanes(source, sum_over(0, n, j, a[2 * j]), _lanes([2 * j]), psi[:1], CHECK, T, under)
    with pytest.raises(Refused):   # lanes swapped against their terms: lane 0 is a[2j+1], not a[2j]
        swapped = ((j, a[2 * j + 1], 2 * j), (j, a[2 * j], 2 * j + 1))
        sums.reindex_lanes(source, target, swapped, psi, CHECK, T, under)
    with pytest.raises(Refused):   # a Sum is not a Prod
        sums.reindex_lanes(PROD(*source.children()), target, _lanes([2 * j, 2 * j + 1]), psi, CHECK, T, under)


def _max(x: z3.ArithRef, y: z3.ArithRef) -> z3.ArithRef:
    return z3.If(x >= y, x, y)


def test_reindex_lanes_proves_an_unrolled_max_with_equal_inits_and_refuses_what_is_not_its_theorem():
    """MaxFrom(init, 0, 2n, a) = MaxFrom(init', 0, n, max(a[2j], a[2j+1])) needs init = init' too."""
    w = z3.Real("w")
    target = max_over(w, 0, n, j, _max(a[2 * j], a[2 * j + 1]))
    source = MAX_FROM(w, z3.BitVecVal(0, 64), 2 * n, z3.Lambda([i], a[i]))
    under = z3.ULT(n, 1 << 20)
    psi = ((i, z3.UDiv(i, 2)), (i, z3.UDiv(i, 2)))
    lanes = _lanes([2 * j, 2 * j + 1])
    theorem = sums.reindex_lanes(source, target, lanes, psi, CHECK, T, under)
    assert theorem.states(z3.Implies(under, source == target))
    with pytest.raises(Refused, match="init"):   # another init: max(w, …) is not max(w + 1, …)
        sums.reindex_lanes(source, max_over(w + 1, 0, n, j, _max(a[2 * j], a[2 * j + 1])), lanes, psi, CHECK, T,
                           under)
    with pytest.raises(Refused, match="lanes"):   # the body is not the max of its lanes (a min)
        sums.reindex_lanes(source, max_over(w, 0, n, j, z3.If(a[2 * j] <= a[2 * j + 1], a[2 * j], a[2 * j + 1])),
                           lanes, psi, CHECK, T, under)
    with pytest.raises(Refused, match="onto"):   # one lane dropped: the odd elements are not hit
        sums.reindex_lanes(source, max_over(w, 0, n, j, a[2 * j]), _lanes([2 * j]), psi[:1], CHECK, T, under)
    with pytest.raises(Refused):   # a MaxFrom is not a MinFrom
        sums.reindex_lanes(MIN_FROM(*source.children()), target, lanes, psi, CHECK, T, under)
    with pytest.raises(Refused):   # nor a Sum
        sums.reindex_lanes(SUM(*source.children()[1:]), target, lanes, psi, CHECK, T, under)


def test_reindex_lanes_of_a_min_is_the_same_with_min():
    w = z3.Real("w")
    source, target = min_over(w, 0, n, i, a[i]), min_over(w, 0, n, j, a[j])
    assert sums.reindex_lanes(source, target, _lanes([j]), ((i, i),), CHECK, T).states(source == target)
    with pytest.raises(Refused):   # a shifted map: the last element is missed
        sums.reindex_lanes(source, target, ((j, a[j], j + 1),), ((i, i - 1),), CHECK, T)


def test_reindex_sum_refuses_a_shifted_bijection():
    source, target = sum_over(0, n, i, a[i]), sum_over(0, n, j, a[j])
    assert reindex_sum(source, target, (j, j), (i, i), CHECK, T).states(source == target)
    with pytest.raises(Refused):
        reindex_sum(source, target, (j, j + 1), (i, i - 1), CHECK, T)


def test_unroll_needs_the_exact_count_and_gives_the_neutral_element_for_none():
    lo = z3.BitVec("lo", 64)
    whole = sum_over(lo, lo + 3, j, a[j])
    small = z3.ULT(lo, 1 << 20)
    theorem = sums.unroll(whole, 3, CHECK, T, small)
    assert theorem.states(z3.Implies(small, whole == z3.Sum([a[lo + t] for t in range(3)])))
    assert sums.unroll(whole, 1, CHECK, T, z3.BoolVal(False)).conclusion.arg(1).eq(whole == a[lo + 0])
    with pytest.raises(Refused):
        sums.unroll(whole, 2, CHECK, T, small)
    with pytest.raises(Refused):   # lo + 3 may wrap: [lo, lo + 3) need not have 3 elements without a bound
        sums.unroll(whole, 3, CHECK, T)
    empty = prod_over(lo, lo, j, a[j])
    assert sums.unroll(empty, 0, CHECK, T).states(empty == z3.RealVal(1))


def test_unroll_of_a_max_from_states_its_definition_with_the_init_first():
    lo, init = z3.BitVec("lo", 64), z3.Real("init")
    small = z3.ULT(lo, 1 << 20)
    whole, least = max_over(init, lo, lo + 2, j, a[j]), min_over(init, lo, lo + 2, j, a[j])
    top = z3.If(init >= a[lo + 0], init, a[lo + 0])
    assert sums.unroll(whole, 2, CHECK, T, small).states(
        z3.Implies(small, whole == z3.If(top >= a[lo + 1], top, a[lo + 1])))
    bottom = z3.If(init <= a[lo + 0], init, a[lo + 0])
    assert sums.unroll(least, 2, CHECK, T, small).states(
        z3.Implies(small, least == z3.If(bottom <= a[lo + 1], bottom, a[lo + 1])))
    assert sums.unroll(max_over(init, lo, lo, j, a[j]), 0, CHECK, T).states(max_over(init, lo, lo, j, a[j]) == init)
    with pytest.raises(Refused):   # one term short: the definition needs the exact count
        sums.unroll(whole, 1, CHECK, T, small)


def test_split_range_of_a_product_multiplies_its_parts_and_refuses_a_point_outside():
    m = z3.BitVec("m", 64)
    whole = prod_over(0, n, j, a[j])
    under = z3.ULE(m, n)
    parts = PROD(z3.BitVecVal(0, 64), m, whole.arg(2)) * PROD(m, n, whole.arg(2))
    assert sums.split_range(whole, m, CHECK, T, under).states(z3.Implies(under, whole == parts))
    with pytest.raises(Refused):
        sums.split_range(whole, m, CHECK, T, z3.ULE(m, n + 1))


def test_reindex_union_proves_a_row_split_over_two_loops_and_refuses_an_overlap_or_a_miscount():
    """Σ_{i<2n} a[i] = Σ_{j<n} a[j] + Σ_{j<n} a[n + j]; halves that overlap (both a[j]) have the right count but
    miss the upper half, and three parts count too many terms."""
    under = z3.ULT(n, 1 << 20)
    source = sum_over(0, 2 * n, i, a[i])
    low, high = sum_over(0, n, j, a[j]), sum_over(0, n, j, a[n + j])

    def part(term, phi, psi):
        return term, ((j, z3.substitute_vars(term.arg(2).body(), j), phi),), ((i, psi),)
    parts = (part(low, j, i), part(high, n + j, i - n))
    theorem = sums.reindex_union(source, parts, CHECK, T, under)
    assert theorem.states(z3.Implies(under, source == low + high))
    with pytest.raises(Refused):   # the lower half twice: onto fails for the upper elements
        sums.reindex_union(source, (part(low, j, i), part(low, j, i)), CHECK, T, under)
    with pytest.raises(Refused):   # a third part: more terms than the range has
        sums.reindex_union(source, (*parts, part(low, j, i)), CHECK, T, under)


def test_regroup_cuts_a_range_into_runs_and_refuses_runs_of_another_length():
    whole = sum_over(0, 12, i, a[i])
    r = z3.BitVec("r", 64)

    def runs(n_runs: int, b: int):
        return sum_over(0, n_runs, j, sum_over(0, b, r, a[0 + (j - 0) * b + r]))
    assert sums.regroup(whole, runs(3, 4), CHECK, T).states(whole == runs(3, 4))
    with pytest.raises(Refused):   # 3 runs of 3 are not 12 elements
        sums.regroup(whole, runs(3, 3), CHECK, T)
    with pytest.raises(Refused):   # runs that read a[b·j + r] with another stride than their length
        sums.regroup(whole, sum_over(0, 3, j, sum_over(0, 4, r, a[0 + (j - 0) * 3 + r])), CHECK, T)


def test_sym_flips_an_equation_under_a_hypothesis():
    x, y = z3.Reals("x y")
    assert rules.sym(smt(z3.Implies(x > 0, x == y + x - y))).states(z3.Implies(x > 0, y + x - y == x))


def test_substitute_under_leaves_the_hypothesis_alone_so_it_may_fix_the_substituted_symbol():
    t = z3.BitVec("tid.x", 32)
    y = z3.Real("y")
    h = t == 0
    pin = smt(z3.Implies(h, z3.BitVecVal(0, 32) == t))
    premise = smt(z3.Not(z3.And(h, a[z3.ZeroExt(32, z3.BitVecVal(0, 32))] != a[z3.BitVecVal(0, 64)])))
    target = z3.Not(z3.And(h, a[z3.ZeroExt(32, t)] != a[z3.BitVecVal(0, 64)]))
    assert rules.substitute_under(pin, premise, target).states(target)
    with pytest.raises(Refused):   # the premise under another hypothesis
        rules.substitute_under(pin, smt(z3.Not(z3.And(z3.BoolVal(False), y != y))), z3.Not(z3.And(h, y != y)))


def test_close_refuses_a_step_whose_equation_is_about_other_terms():
    divided = a[c]
    claim = smt(compose.comparison(H, a[c], divided))
    split = smt(z3.Implies(H, defines(e, 300, c, r)))
    other = divide_by_constant(z3.URem(e, 300), c, r, split)   # r = e % 300: not the division the step undid
    assert compose.close(claim, H, [compose.Step(a[c], a[z3.UDiv(e, 300)], other)]) is None
    assert compose.close(claim, H, [compose.Step(a[c], a[z3.UDiv(e, 300)], None)]) is None
    assumed = rules.assume(z3.Implies(H, c == z3.UDiv(e, 300)))   # an equation only assumed: never a goal
    closed = compose.close(claim, H, [compose.Step(a[c], a[z3.UDiv(e, 300)], assumed)])
    assert closed is not None and not closed.states(compose.comparison(H, a[c], a[z3.UDiv(e, 300)]))


def test_a_prefix_restatement_refuses_a_wrong_group_size_or_tail():
    """The kernel's running sum of pairs over [0, K) against the reference's prefix [0, 2K + 1): with s = 2 and
    one tail element it is proved; a group of 3, or no tail, is refused by the rules."""
    k = z3.BitVec("K", 64)
    h = z3.ULT(k, 1 << 20)
    ck = sum_over(0, k, j, a[2 * j] + a[2 * j + 1])
    cr = sum_over(0, 2 * k + 1, i, a[i])
    lo = cr.arg(0)

    def equate(s: int, tail: int | None, rest):
        combined = ck + rest if rest is not None else ck
        return prefix_proofs.equation(ck, cr, s, tail, combined, h, CHECK, T, lambda *_: None)
    last = z3.substitute_vars(cr.arg(2).body(), lo + 2 * k + 0)
    theorem = equate(2, 1, last)
    assert theorem is not None and theorem.states(z3.Implies(h, ck + last == cr))
    assert equate(3, 1, last) is None
    assert equate(2, 0, None) is None


def test_reindex_by_takes_its_body_from_a_theorem_about_a_fresh_symbol_only():
    """Σ_{i<n} a[i] = Σ_{j<n} (a[j] + 0) from the theorem ¬((under ∧ v < n) ∧ a[v] + 0 ≠ a[v]) about a free v;
    the same premise with another map, or generalised over a symbol the comprehensions mention, is refused."""
    v, var, m = z3.BitVecs("v var m", 64)
    under = z3.ULT(n, 1 << 20)
    source, target = sum_over(0, n, i, a[i]), sum_over(0, n, j, a[j] + 0)
    body = smt(z3.Not(z3.And(z3.And(under, z3.ULE(z3.BitVecVal(0, 64), v), z3.ULT(v, n)), a[v] + 0 != a[v])))
    theorem = sums.reindex_by(source, target, (var, var), (m, m), body, v, CHECK, T, under)
    assert theorem.states(z3.Implies(under, source == target))
    with pytest.raises(Refused):   # φ(j) = j + 1: the premise is not the body condition at that map
        sums.reindex_by(source, target, (var, var + 1), (m, m - 1), body, v, CHECK, T, under)
    with pytest.raises(Refused):   # n is not free for generalisation: the comprehensions mention it
        sums.reindex_by(source, target, (var, var), (m, m), body, n, CHECK, T, under)


def test_a_matched_pair_with_a_tampered_reindexing_is_refused():
    """The matcher's pairing of an unrolled row sum restated by `reindex_lanes`; its maps swapped between the
    lanes (a wrong bijection the tactic might propose) are refused, so no equation comes back."""
    from semantics.properties import matched_sums
    from semantics.properties.matched_sums import Match
    from semantics.properties.reductions import Family

    class Stub:
        checker, timeout_s, hyp = CHECK, T, z3.ULT(n, 1 << 20)

        def record(self, *_):
            pass
    ck = sum_over(0, n, j, a[2 * j] + a[2 * j + 1])
    cr = sum_over(0, 2 * n, i, a[i])
    family = Family("sum", z3.BitVecVal(0, 64), n, j, (a[2 * j], a[2 * j + 1]), None)
    ref = Family("sum", z3.BitVecVal(0, 64), 2 * n, i, (a[i],), None)
    stub = Stub()
    stub.matched = Match([family], ref, (2 * j, 2 * j + 1), (None, None))
    assert matched_sums.equation(stub, ck, cr).states(z3.Implies(stub.hyp, ck == cr))
    stub.matched = Match([family], ref, (2 * j + 1, 2 * j), (None, None))
    assert matched_sums.equation(stub, ck, cr) is None


@pytest.mark.parametrize("name", ["bias_add_broadcast_2d", "loop_rowsum_per_thread", "loop_cumsum_row",
                                  "lib_cg_row_sum", "nested_matmul_k_tiles"])
def test_rewritten_lanes_of_these_examples_are_stated_by_kernel_theorems(name):
    """Their lanes were rewritten by the division tactic, the matcher (an unrolled row sum, a union of 32 Sums),
    the prefix split and a split nest; each lane's theorem now states its top goal, so none is counted as
    trusted to a tactic."""
    report = verdict.verify(prepare(EXAMPLES / name / "lark.toml").problem, Z3Checker(), PROVERS)
    assert report.verdict == "verified"
    assert report.goals["equivalence"]["rewritten"] == 0
    assert report.goals["equivalence"]["stated"] == report.goals["equivalence"]["goals"]


def test_an_equation_a_tactic_only_assumes_leaves_the_lane_to_the_tactic(monkeypatch):
    """A matcher that skips the side conditions of its restatement (it assumes ck = cr) does not get the lane
    stated: the closed theorem keeps the assumption, so the lane stays counted as trusted to the tactic."""
    from semantics.properties import matched_sums
    monkeypatch.setattr(matched_sums, "equation", lambda m, ck, cr: rules.assume(z3.Implies(m.hyp, ck == cr)))
    report = verdict.verify(prepare(EXAMPLES / "loop_rowsum_per_thread" / "lark.toml").problem, Z3Checker(), PROVERS)
    assert report.verdict == "verified" and report.goals["equivalence"]["rewritten"] == 1


def test_substitute_under_takes_a_conjunction_of_equations_at_once():
    """`sums_apart` of many Sums concludes h → s_1 = t_1 ∧ … ∧ s_n = t_n; one `substitute_under` puts every s_i
    back, and refuses a target where one of them is not the premise's term."""
    y, z, u, v = z3.Reals("y z u v")
    h = y > 0
    both = rules.assume(z3.Implies(h, z3.And(u == y + y, v == z * 1)))
    premise = smt(z3.Not(z3.And(h, y + y + z * 1 != 2 * y + z)))
    target = z3.Not(z3.And(h, u + v != 2 * y + z))
    assert rules.substitute_under(both, premise, target).conclusion.eq(target)
    with pytest.raises(Refused):   # v is put back, u is not: the premise is not the target with both replaced
        rules.substitute_under(both, premise, z3.Not(z3.And(h, y + y + v + u - u != 2 * y + z)))
