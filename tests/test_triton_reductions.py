"""Pieces behind Triton reductions: masked tails of sums, and warp-wide stores of one value."""

import z3

from lean_pool.checker import Z3Checker
from semantics.comprehension import SUM, sum_over
from semantics.properties import padding, warp_stores
from semantics.properties.races import OTHER
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access

X = z3.Function("x", z3.BitVecSort(64), z3.RealSort())
ROW = z3.BitVec("row", 64)
HYP = z3.ULT(ROW, 512)
THREAD = Thread.fresh("")
LAUNCH = Launch((512, 1, 1), (128, 1, 1))


def _pad(sum_term: z3.ArithRef) -> tuple[z3.ExprRef, list]:
    log = []
    out, _cuts = padding.rewrite(sum_term, HYP, Z3Checker(), 30.0, lambda ob, outcome: log.append((ob, outcome)))
    return out, log


def _masked(lane: int, pad_when) -> z3.ArithRef:
    j = z3.BitVec("j", 64)
    col = 1024 * j + lane
    return sum_over(0, 98, j, z3.If(pad_when(col), z3.RealVal(0), X(ROW * 100000 + col)))


def test_masked_tail_is_cut_to_the_unmasked_range():
    out, log = _pad(_masked(700, lambda col: z3.UGE(col, 100000)))
    assert z3.is_app(out) and out.decl() == SUM
    assert out.arg(1).as_long() == 97                    # 1024·97 + 700 ≥ 100000: the last iteration is padding
    assert not z3.is_app_of(out.arg(2).body(), z3.Z3_OP_ITE)
    assert all(outcome.status == "proved" for _, outcome in log)


def test_a_block_of_lanes_is_cut_in_batches_of_one_rule_application_each():
    """130 lanes (a block's partial sums) are cut by three `sums_apart` applications of four obligations each,
    not four per lane; the cuts' theorem states every lane's equation."""
    lanes = [_masked(lane, lambda col: z3.UGE(col, 100000)) for lane in range(600, 730)]
    log = []
    out, cuts = padding.rewrite(z3.Sum(lanes), HYP, Z3Checker(), 30.0, lambda ob, outcome: log.append(outcome))
    assert len(cuts) == 3 and len(log) == 12 and all(outcome.status == "proved" for outcome in log)
    kept = sorted(s.arg(1).as_long() for s in out.children())
    assert kept == [97] * 58 + [98] * 72    # lanes 672.. pad their 98th iteration
    heads, theorem = cuts[0]
    assert theorem.conclusion.eq(z3.Implies(HYP, z3.And([whole == head for whole, head in heads.items()])))


def test_lane_that_is_never_masked_keeps_its_whole_range():
    out, _ = _pad(_masked(5, lambda col: z3.UGE(col, 100000)))
    assert out.arg(1).as_long() == 98


def test_mask_that_is_not_a_tail_is_left_alone():
    term = _masked(700, lambda col: z3.Extract(10, 10, col) == 1)   # odd iterations padded: not a tail
    out, _ = _pad(term)
    assert z3.eq(out, term)


def _store(value: z3.ArithRef, guard: z3.BoolRef | None = None) -> Access:
    offset = z3.ZeroExt(32, z3.LShR(THREAD.tid[0], 5)) * 4
    return Access("store", "shared", "smem", offset, 4, 4, (value,), z3.BoolVal(True) if guard is None else guard,
                  (), 1, None)


def _uniform(access: Access) -> bool:
    return warp_stores.uniform(access, THREAD, OTHER, LAUNCH, set(), Z3Checker(), 30.0, lambda ob, outcome: None)


def _lane_sum(tid: z3.BitVecRef) -> z3.ArithRef:
    """A butterfly all-reduce's result at `tid`: the 32 lanes' values, in an order that depends on the lane."""
    warp = z3.Extract(31, 5, tid)
    lane = z3.Extract(4, 0, tid)
    return z3.Sum([X(z3.ZeroExt(32, z3.Concat(warp, lane ^ m))) for m in range(32)])


def test_butterfly_result_is_one_value_per_warp():
    assert _uniform(_store(_lane_sum(THREAD.tid[0])))


def test_lane_dependent_value_is_not_one_write():
    assert not _uniform(_store(X(z3.ZeroExt(32, THREAD.tid[0]))))


def test_divergent_store_is_not_one_write():
    lane0 = (THREAD.tid[0] & 31) == 0
    assert not _uniform(_store(_lane_sum(THREAD.tid[0]), guard=z3.Not(lane0)))


def test_a_sites_warp_wide_obligations_are_built_once():
    """The race search proves them and the Deferred goal states them: one build (32 lanes substituted) serves
    both; the same site with another shared set, or rewritten in place since, is built anew."""
    from semantics.properties.races import warp_wide_obligations

    site = _store(_lane_sum(THREAD.tid[0]))
    first = warp_wide_obligations(site, THREAD, LAUNCH, set())
    assert first is not None and warp_wide_obligations(site, THREAD, LAUNCH, set()) is first
    assert warp_wide_obligations(site, THREAD, LAUNCH, {"smem"}) is not first
    site.values = (_lane_sum(THREAD.tid[0]) + 1,)      # a later pass rewrote the site in place: built anew
    again = warp_wide_obligations(site, THREAD, LAUNCH, set())
    assert again is not None and again is not first
