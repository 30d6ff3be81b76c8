"""Arg-extremum folds (argmax/argmin): the loop summary of a carried (value, index) pair, the matcher of two
folds, and their concrete replay."""

import z3

from lean_pool.checker import Z3Checker
from orchestrator.provers.reindex import propose
from semantics.arg_extrema import KINDS, arg_over, fold, kind_of
from semantics.comprehension import max_over
from semantics.properties.reductions import Matcher
from semantics.ptx.arg_accumulators import classify
from semantics.replay import Evaluator

INDEX = z3.BitVecSort(64)
X = z3.Function("x", INDEX, z3.RealSort())
B = z3.Real("b!hdr")            # the value register's header symbol
A = z3.BitVec("a!hdr", 64)      # the index register's
M = z3.BitVec("m!hdr", 64)      # the loop counter's (an induction variable)
T = X(M * 7)                    # what one iteration compares


def pair(selects, index=M, value_next=None):
    """The generic run's back-edge values of (value, index) for `if (selects(T, b)) { b = T; a = index; }`."""
    cond = selects(T, B)
    return z3.If(cond, T, B) if value_next is None else value_next, z3.If(cond, index, A)


def classified(value_next, index_next):
    return classify(A, index_next, {"%f1": (B, value_next)})


def test_a_strict_greater_pair_is_an_argmax_and_its_value_a_max():
    found = classified(*pair(lambda t, b: t > b))
    assert found is not None
    arg, value = found
    assert (arg.kind, value.kind, arg.value_reg) == ("argmax", "max", "%f1")
    assert z3.eq(arg.steps[0], T) and z3.eq(arg.indices[0], M) and z3.eq(value.step, T)


def test_the_comparison_names_the_kind_however_it_is_written():
    forms = {"argmax": lambda t, b: b < t, "argmax_last": lambda t, b: z3.Not(t < b),
             "argmin": lambda t, b: z3.Not(b <= t), "argmin_last": lambda t, b: t <= b}
    for kind, selects in forms.items():
        value_next, index_next = pair(selects)
        assert classified(value_next, index_next)[0].kind == kind
        # z3's simplifier writes If(T > b, x, y) as If(T <= b, y, x): read off the same
        assert classified(z3.simplify(value_next), z3.simplify(index_next))[0].kind == kind


def test_an_index_selected_on_another_comparison_is_refused():
    value_next, _ = pair(lambda t, b: t > b)
    other = z3.If(T > B + 1, M, A)
    assert classified(value_next, other) is None
    assert classified(value_next, z3.If(X(M) > B, M, A)) is None       # compares another element


def test_a_value_that_keeps_another_element_is_refused():
    _, index_next = pair(lambda t, b: t > b)
    assert classified(z3.If(T > B, X(M + 1), B), index_next) is None    # takes an element it did not compare
    assert classified(z3.If(T > B, T, B + 1), index_next) is None
    assert classified(z3.If(T >= B, T, B), index_next) is None          # selected on >= while the index on >


def test_an_index_that_reads_the_carried_pair_is_refused():
    value_next, _ = pair(lambda t, b: t > b)
    assert classified(value_next, z3.If(T > B, A + 1, A)) is None
    assert classified(value_next, z3.If(T > B, M, A + 1)) is None     # not kept when not selected


def test_fold_keeps_the_first_index_of_a_tie_and_the_last_twin_the_last():
    values = list(enumerate([1, 3, 2, 3, 0]))
    assert fold("argmax", 0, 9, 10, values) == 11
    assert fold("argmax_last", 0, 9, 10, values) == 13
    assert fold("argmin", 1, 9, 10, values) == 14
    assert fold("argmax", 5, 9, 10, values) == 9             # nothing beats the start: its index


def matcher(log):
    return Matcher(z3.BoolVal(True), propose, Z3Checker(), 30.0, lambda ob, outcome: log.append(ob), {}, "t")


def _reference(kind="argmax", n=4095, shift=1):
    t = z3.BitVec("r!t", 64)
    return arg_over(kind, X(z3.BitVecVal(0, 64)), 0, 1, n, t, X(t + shift))


def _kernel(kind="argmax", n=4095):
    k = z3.BitVec("k!t", 64)
    return arg_over(kind, X(z3.BitVecVal(0, 64)), 0, 1, n, k, X(1 + k))


def test_equal_folds_are_matched_by_their_premises():
    log = []
    kernel, reference = matcher(log).rewrite(_kernel() + 0, _reference() + 0)
    assert z3.eq(kernel, reference) and kind_of(kernel) is None
    assert any("elements" in ob.name for ob in log) and any("length" in ob.name for ob in log)


def test_folds_of_another_kind_length_or_body_are_not_matched():
    for kernel, reference in ((_kernel("argmax_last"), _reference()), (_kernel(n=4094), _reference()),
                              (_kernel(), _reference(shift=2)), (_kernel("argmin"), _reference())):
        k, r = matcher([]).rewrite(kernel, reference)
        assert kind_of(k) is not None and kind_of(r) is not None


def test_a_long_fold_replays_sparsely_and_tells_the_tie_apart():
    """4095 steps, every element the default 2 but four: the first and last index of the max differ."""
    model = z3.Solver()
    assert model.check() == z3.sat
    inputs = {("x", 0): 1, ("x", 100): 5, ("x", 300): 5, ("x", 7): -1, ("x", None): 2}
    first = Evaluator(model.model(), dict(inputs)).value(_kernel())
    last = Evaluator(model.model(), dict(inputs)).value(_kernel("argmax_last"))
    assert (first, last) == (100, 300)
    low = Evaluator(model.model(), dict(inputs)).value(_kernel("argmin"))
    assert low == 7
    flat = Evaluator(model.model(), {**inputs, ("x", None): 7})   # the default is the max now: its first step
    assert flat.value(_kernel()) == 1 and flat.reads[("x", None)] == 7


def test_every_kind_has_its_own_symbol():
    assert len({k.decl.name() for k in KINDS.values()}) == len(KINDS)


def _chain(selects_per_lane, elements):
    """The back edges of an unrolled body: lane l compares elements[l] with the value before it."""
    value, index = B, A
    for lane, (selects, element) in enumerate(zip(selects_per_lane, elements, strict=True)):
        cond = selects(element, value)
        value, index = z3.If(cond, element, value), z3.If(cond, M + lane, index)
    return value, index


LANES = [X(M * 7 + lane) for lane in range(4)]


def test_an_unrolled_chain_is_one_fold_of_four_lanes():
    arg, value = classified(*_chain([lambda t, b: t > b] * 4, LANES))
    assert arg.kind == "argmax" and len(arg.steps) == 4 and value.kind == "max"
    assert all(z3.eq(s, e) for s, e in zip(arg.steps, LANES, strict=True))


def test_a_chain_with_one_lane_of_another_kind_is_refused():
    assert classified(*_chain([lambda t, b: t > b] * 3 + [lambda t, b: t >= b], LANES)) is None


def test_a_chain_whose_index_compares_with_the_wrong_value_is_refused():
    value, _ = _chain([lambda t, b: t > b] * 2, LANES[:2])
    skipping = z3.If(LANES[1] > B, M + 1, z3.If(LANES[0] > B, M, A))   # lane 1 against b, not against b_1
    assert classified(value, skipping) is None


def _lanes(n, lanes=4, shift=1, kind="argmax"):
    k = z3.BitVec("k!l", 64)
    return arg_over(kind, X(z3.BitVecVal(0, 64)), 0, 1, n, k, *[X(lanes * k + lane + shift) for lane in range(lanes)])


def test_a_four_lane_fold_matches_the_reference_of_four_times_its_length():
    log = []
    kernel, reference = matcher(log).rewrite(_lanes(1023) + 0, _reference(n=4092) + 0)
    assert z3.eq(kernel, reference) and any("lane 3" in ob.name for ob in log)
    for kernel, reference in ((_lanes(1022), _reference(n=4092)), (_lanes(1023, shift=2), _reference(n=4092))):
        k, r = matcher([]).rewrite(kernel, reference)
        assert kind_of(k) is not None and kind_of(r) is not None


def _remainder(start_value, lanes_count=1023, rest=3, base=4093, shift=4093):
    t = z3.BitVec("t!rem", 64)
    return arg_over("argmax", start_value, _lanes(lanes_count), base, rest, t, X(t + shift))


def _running_max(n):
    j = z3.BitVec("j!run", 64)
    lanes = [X(4 * j + lane + 1) for lane in range(4)]
    tree = lanes[0]
    for leaf in lanes[1:]:
        tree = z3.If(tree >= leaf, tree, leaf)
    return max_over(X(z3.BitVecVal(0, 64)), 0, n, j, tree)


def test_a_remainder_fold_started_from_an_unrolled_one_is_split_off_the_reference():
    log = []
    kernel, reference = matcher(log).rewrite(_remainder(_running_max(1023)) + 0, _reference() + 0)
    assert z3.eq(kernel, reference) and any("prefix" in ob.name for ob in log)


def test_a_remainder_started_from_another_value_or_skipping_an_element_is_not_split():
    for kernel in (_remainder(_running_max(1022)), _remainder(X(z3.BitVecVal(0, 64))),
                   _remainder(_running_max(1023), shift=4094), _remainder(_running_max(1023), base=4092)):
        k, r = matcher([]).rewrite(kernel, _reference())
        assert kind_of(k) is not None and kind_of(r) is not None


def test_a_four_lane_fold_replays_in_position_order():
    model = z3.Solver()
    assert model.check() == z3.sat
    inputs = {("x", 0): 1, ("x", 102): 5, ("x", 103): 5, ("x", None): 2}
    first = Evaluator(model.model(), dict(inputs)).value(_lanes(1023))
    last = Evaluator(model.model(), dict(inputs)).value(_lanes(1023, kind="argmax_last"))
    assert (first, last) == (102, 103)


def test_a_narrow_index_widened_is_the_reference_only_where_the_range_fits():
    """The matched fold is named by its range term: an `int arg` widened at the store equals torch's index
    over 4095 elements, a `signed char arg` over 200 does not (its index 186 reads back as -70)."""
    for bits, n, fits in ((32, 4095, True), (8, 200, False)):
        wide = _kernel(n=n)
        narrow = z3.SignExt(64 - bits, z3.Extract(bits - 1, 0, wide))
        kernel, reference = matcher([]).rewrite(narrow, _reference(n=n))
        assert kind_of(reference) is None
        solver = z3.Solver()
        solver.add(kernel != reference)
        assert solver.check() == (z3.unsat if fits else z3.sat)
