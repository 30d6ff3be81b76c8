"""The reduction matcher: comprehensions are identified only after a proved reindexing."""

import z3

from lean_pool.checker import Z3Checker
from orchestrator.provers.reindex import propose
from semantics.comprehension import MAX_FROM, MIN_FROM, SUM, max_over, min_over, sum_over
from semantics.properties.reductions import Matcher

INDEX = z3.BitVecSort(64)
A = z3.Function("A", INDEX, z3.RealSort())
V = z3.Function("v", INDEX, z3.RealSort())
ROW = z3.BitVec("row", 64)
HYP = z3.ULT(ROW, 2048)


def matcher(log=None) -> Matcher:
    def record(ob, outcome):
        if log is not None:
            log.append((ob, outcome))

    return Matcher(HYP, propose, Z3Checker(), 30.0, record, {}, "t")


def unrolled_dot(iterations: int) -> z3.ArithRef:
    j = z3.BitVec("j", 64)
    lanes = sum(A(ROW * 1024 + 4 * j + i) * V(4 * j + i) for i in range(4))
    return sum_over(0, iterations, j, lanes)


def dot(n: int) -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return sum_over(0, n, m, A(ROW * 1024 + m) * V(m))


def test_unrolled_sum_matches_reference_by_bijection():
    log = []
    kernel, reference = matcher(log).rewrite(unrolled_dot(256), dot(1024))
    assert z3.eq(kernel, reference) and str(kernel).startswith("reduction!")
    names = [ob.name for ob, _ in log]
    surjective = any(w in n for n in names for w in ("every element of the reference", "residue class", "image is"))
    assert surjective and any("as many terms" in n for n in names)


def test_dropped_iteration_is_not_matched():
    kernel, reference = matcher().rewrite(unrolled_dot(255), dot(1024))
    assert kernel.decl() == SUM and reference.decl() == SUM


def test_wrong_stride_is_not_matched():
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    kernel = sum_over(0, 1024, j, A(ROW * 1024 + j) * V(j))
    shifted = sum_over(0, 1024, m, A(ROW * 1024 + m) * V(m + 1))
    k2, r2 = matcher().rewrite(kernel, shifted)
    assert k2.decl() == SUM


def test_max_with_initial_element_matches_set_of_elements():
    # kernel: m = x[t]; for c in 1..n: m = max(m, x[c])   reference: max(x[0], x[1..n))
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    base = ROW * 1000
    kernel = max_over(A(base), 0, 999, j, A(base + 1 + j))
    reference = max_over(A(base), 1, 1000, m, A(base + m))
    k2, r2 = matcher().rewrite(kernel, reference)
    assert z3.eq(k2, r2)


def test_max_missing_an_element_is_not_matched():
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    base = ROW * 1000
    kernel = max_over(A(base), 0, 998, j, A(base + 1 + j))      # never looks at the last element
    reference = max_over(A(base), 1, 1000, m, A(base + m))
    k2, _ = matcher().rewrite(kernel, reference)
    assert k2.decl() == MAX_FROM


def _unrolled_then_remainder(over, main: int, rest: int) -> z3.ArithRef:
    """nvcc's running max/min over a row of 1000 from x[0]: `main` iterations of 4 lanes from column 1, then
    a remainder loop of `rest` columns started from the main loop's result."""
    j, k = z3.BitVec("j", 64), z3.BitVec("k", 64)
    base = ROW * 1000
    lanes = A(base + 1 + 4 * j)
    for i in range(1, 4):
        lanes = z3.If(lanes >= A(base + 1 + 4 * j + i), lanes, A(base + 1 + 4 * j + i)) if over is max_over \
            else z3.If(lanes <= A(base + 1 + 4 * j + i), lanes, A(base + 1 + 4 * j + i))
    inner = over(A(base), 0, main, j, lanes)
    return over(inner, 0, rest, k, A(base + 1 + 4 * main + k))


def test_a_running_max_or_min_started_from_another_is_one_union():
    m = z3.BitVec("m", 64)
    for over, decl in ((max_over, MAX_FROM), (min_over, MIN_FROM)):
        reference = over(A(ROW * 1000), 1, 1000, m, A(ROW * 1000 + m))
        k2, r2 = matcher().rewrite(_unrolled_then_remainder(over, 249, 3), reference)
        assert z3.eq(k2, r2), decl
        k2, _ = matcher().rewrite(_unrolled_then_remainder(over, 249, 2), reference)   # the last column missed
        assert k2.decl() == decl


def test_progression_tiling_arithmetic():
    from semantics.properties.reductions import _tiles

    # {0, 4, 8, ...} ∪ {1, 5, ...} ∪ {2, ...} ∪ {3, ...} over [0, 16): an exact tiling
    assert _tiles([(i, 4, 4) for i in range(4)], (0, 16), exact=True) is True
    # a missing residue class leaves holes
    assert _tiles([(i, 4, 4) for i in range(3)], (0, 16), exact=False) is False
    # one progression too short: element 15 is not covered
    assert _tiles([(0, 4, 4), (1, 4, 4), (2, 4, 4), (3, 4, 3)], (0, 16), exact=False) is False
    # overlap is fine for max (a set), not for sums (a multiset)
    overlapping = [(0, 1, 10), (5, 1, 11)]
    assert _tiles(overlapping, (0, 16), exact=False) is True
    assert _tiles(overlapping, (0, 16), exact=True) is False
    # mixed strides: a singleton, a one-element family and four stride-4 lanes of an unrolled loop
    mixed = [(0, 1, 1), (1, 1, 1), *[(2 + i, 4, 2) for i in range(4)]]
    assert _tiles(mixed, (0, 10), exact=True) is True
    assert _tiles(mixed, (0, 11), exact=False) is False
    # undecided, not refuted: a non-positive stride, or more residue classes than the walk takes
    assert _tiles([(0, 0, 4)], (0, 16), exact=False) is None
    assert _tiles([(0, 65537, 2), (1, 65539, 2)], (0, 1 << 40), exact=False) is None


# A block reduction through shared memory: s[0] ends as a tree over one leaf per thread, each leaf the
# per-thread loop's comprehension at a concrete thread index (simplified, as after pinning the storing thread).
THREADS, PER_THREAD = 32, 40
N = THREADS * PER_THREAD


def _leaf_sum(t: int) -> z3.ArithRef:
    j = z3.BitVec("j", 64)
    return z3.simplify(sum_over(0, PER_THREAD, j, A(ROW * N + t + THREADS * j)))


def _leaf_max(t: int) -> z3.ArithRef:
    j = z3.BitVec("j", 64)
    return z3.simplify(max_over(A(ROW * N + t), 0, PER_THREAD - 1, j, A(ROW * N + t + THREADS * (j + 1))))


def _max_tree(leaves: list[z3.ArithRef]) -> z3.ArithRef:
    while len(leaves) > 1:
        pairs = zip(leaves[::2], leaves[1::2], strict=True)
        leaves = [z3.If(a >= b, a, b) for a, b in pairs]
    return leaves[0]


def _row_sum() -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return sum_over(0, N, m, A(ROW * N + m))


def _row_max() -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return max_over(A(ROW * N), 1, N, m, A(ROW * N + m))


def test_fold_groups_leaves_at_consecutive_indices():
    from semantics.properties.fold import fold

    folds, alone = fold([_leaf_sum(t) for t in range(THREADS)], "t")
    assert len(folds) == 1 and folds[0].syntactic() and folds[0].fills_box()
    assert folds[0].outer.counts == (THREADS - 1,)   # thread 0's leaf simplifies apart
    assert len(alone) == 1 and z3.eq(_first_read(alone[0]), _first_read(_leaf_sum(0)))
    assert z3.Solver().check(folds[0].equalities()) == z3.unsat


def test_fold_splits_where_a_constant_stops_moving_affinely():
    from semantics.properties.fold import fold

    j = z3.BitVec("j", 64)
    leaves = [z3.simplify(sum_over(0, 3 if t < 20 else 2, j, A(ROW * N + t + THREADS * j))) for t in range(1, 32)]
    folds, alone = fold(leaves, "t")
    assert sorted(f.outer.counts for f in folds) == [(12,), (19,)] and not alone
    long_run = next(f for f in folds if f.outer.counts == (19,))
    assert {_first_read(m).get_id() for m in long_run.members} == \
        {_first_read(leaves[t - 1]).get_id() for t in range(1, 20)}


def _first_read(comprehension: z3.ExprRef) -> z3.ExprRef:
    """A Sum's element at its first index (the same whatever its bound variable is called)."""
    return z3.simplify(z3.substitute_vars(comprehension.arg(2).body(), comprehension.arg(0)))


def test_block_tree_sum_matches_in_a_handful_of_obligations():
    log = []
    kernel, reference = matcher(log).rewrite(z3.Sum([_leaf_sum(t) for t in range(THREADS)]), _row_sum())
    assert z3.eq(kernel, reference)
    assert any("are one term at" in ob.name for ob, _ in log)
    assert len(log) < 30   # thread by thread it would be ~6 per leaf


def test_block_tree_max_matches():
    log = []
    kernel, reference = matcher(log).rewrite(_max_tree([_leaf_max(t) for t in range(THREADS)]), _row_max())
    assert z3.eq(kernel, reference)
    assert any("are one term at" in ob.name for ob, _ in log)


def test_block_tree_sum_missing_a_thread_is_not_matched():
    leaves = [_leaf_sum(t) for t in range(THREADS) if t != 17]
    kernel, _ = matcher().rewrite(z3.Sum(leaves), _row_sum())
    assert not str(kernel).startswith("reduction!")


def test_block_tree_sum_with_a_thread_twice_is_not_matched():
    leaves = [_leaf_sum(t) for t in range(THREADS)] + [_leaf_sum(5)]
    kernel, _ = matcher().rewrite(z3.Sum(leaves), _row_sum())
    assert not str(kernel).startswith("reduction!")


def test_block_tree_with_one_wrong_leaf_is_not_matched():
    j = z3.BitVec("j", 64)
    wrong = z3.simplify(sum_over(0, PER_THREAD, j, A(ROW * N + 9 + THREADS * j) * 2))
    leaves = [wrong if t == 9 else _leaf_sum(t) for t in range(THREADS)]
    kernel, _ = matcher().rewrite(z3.Sum(leaves), _row_sum())
    assert not str(kernel).startswith("reduction!")


def test_sparse_replay_of_a_long_sum_needs_no_enumeration():
    from fractions import Fraction

    import mpmath

    from semantics.replay import Evaluator

    m = z3.BitVec("m", 64)
    long_sum = sum_over(0, 10**9, m, A(3 * m + 1))
    solver = z3.Solver()
    assert solver.check() == z3.sat
    ev = Evaluator(solver.model(), {("A", 7): Fraction(5), ("A", 8): Fraction(100), ("A", None): Fraction(1, 2)})
    # A(7) is the term m = 2 (5 instead of the default 1/2); A(8) is never read
    assert ev.value(long_sum) == mpmath.mpf(1) / 2 * (10**9 - 1) + 5
    assert ("A", None) in ev.reads and ("A", 8) not in ev.reads
    # a max over as many terms sees the one large element
    assert Evaluator(solver.model(), dict(ev.overrides)).value(max_over(A(0), 0, 10**9, m, A(3 * m + 1))) == 5


def test_a_sum_is_not_matched_by_values_that_the_reference_repeats():
    """Kernel x0 + x1 + x1 against the reference's x[m mod 2] over three terms (x0 + x1 + x0): each kernel term
    equals a reference term and each reference term equals a kernel term, and the counts agree, but the sums
    differ. Surjectivity must be on indices (φ(ψ(m)) = m), which a lying prover cannot fake."""
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    kernel = sum_over(0, 3, j, A(z3.If(j == 0, z3.BitVecVal(0, 64), z3.BitVecVal(1, 64))))
    reference = sum_over(0, 3, m, A(z3.URem(m, 2)))

    def lying(key, source, source_var, target, target_var):
        if ":phi" in key:
            return z3.If(source_var == 0, z3.BitVecVal(0, 64), z3.BitVecVal(1, 64))
        return z3.If(source_var == 2, z3.BitVecVal(0, 64), source_var)

    k2, r2 = Matcher(HYP, lying, Z3Checker(), 30.0, lambda *_: None, {}, "t").rewrite(kernel, reference)
    assert k2.decl() == SUM and r2.decl() == SUM


# A Triton tl.sum over a block: thread t of T holds R register lanes, lane r reading column t + T·r of each
# chunk of T·R columns. As after pinning the storing thread, each (t, r) is a concrete term; the register's
# offset stays outside the 32-bit index arithmetic (sign-extended) and the thread's inside, as Triton emits
# them, so no single constant names the lane: the terms fold over the box (thread, register).
CHUNKS = 6


def _lane_sum(t: int, r: int, threads: int, registers: int, scale: int = 1) -> z3.ArithRef:
    j = z3.BitVec("j", 64)
    inner = z3.SignExt(32, t + threads * registers * z3.Extract(31, 0, j))
    return z3.simplify(sum_over(0, CHUNKS, j, scale * A(ROW * 4096 + threads * r + inner)), elim_sign_ext=False)


def _block_sum(threads: int, registers: int, lanes=None) -> z3.ArithRef:
    lanes = lanes or {}
    return z3.Sum([lanes.get((t, r), _lane_sum(t, r, threads, registers))
                   for t in range(threads) for r in range(registers)])


def _chunked_row_sum(threads: int, registers: int) -> z3.ArithRef:
    m = z3.BitVec("m", 64)
    return sum_over(0, CHUNKS * threads * registers, m, A(ROW * 4096 + m))


def test_fold_finds_a_box_of_threads_by_registers():
    from semantics.properties.fold import fold

    terms = [_lane_sum(t, r, 32, 4) for t in range(32) for r in range(4)]
    folds, alone = fold(terms, "b")
    # thread 0 and register 0 each lose a constant (0 + x is x): their terms have other shapes
    assert sorted(f.outer.counts for f in folds) == [(3,), (31,), (31, 3)] and len(alone) == 1
    assert all(f.fills_box() and f.syntactic() for f in folds)
    assert all(z3.Solver().check(f.equalities()) == z3.unsat for f in folds)


def test_block_sum_obligations_do_not_grow_with_the_block():
    counts = []
    for threads, registers in ((32, 4), (128, 8)):
        log = []
        kernel, reference = matcher(log).rewrite(_block_sum(threads, registers), _chunked_row_sum(threads, registers))
        assert z3.eq(kernel, reference) and str(kernel).startswith("reduction!")
        counts.append(len(log))
    # the matcher's obligations and those of the union's restatement by the kernel (`tiled_union`: one per part);
    # lane by lane, 128 × 8 lanes would be thousands
    assert counts[0] == counts[1] < 50


def test_block_sum_with_one_wrong_lane_is_not_matched():
    wrong = {(5, 2): _lane_sum(5, 2, 32, 4, scale=2)}   # one register of one thread doubled
    kernel, _ = matcher().rewrite(_block_sum(32, 4, wrong), _chunked_row_sum(32, 4))
    assert not str(kernel).startswith("reduction!")


def test_block_sum_with_a_lane_read_twice_is_not_matched():
    # thread 5's register 2 reads thread 6's column: same shape, a constant off the box's progression
    twice = {(5, 2): _lane_sum(6, 2, 32, 4)}
    kernel, _ = matcher().rewrite(_block_sum(32, 4, twice), _chunked_row_sum(32, 4))
    assert not str(kernel).startswith("reduction!")


def _partial_sums(threads: int, cols: int, body) -> list[z3.ArithRef]:
    """Thread t's strided partial sum of a row: Σ_j body(t + threads·j) over cols / threads terms."""
    j = z3.BitVec("j", 64)
    return [sum_over(0, cols // threads, j, body(t + threads * j)) for t in range(threads)]


def test_a_mean_distributed_into_a_variance_body_is_one_symbol_everywhere():
    # z3 writes x - (S0 + … + S3)/16 as x + -1/16·S0 + … + -1/16·S3, in the value and inside the variance's
    # body: the four partial sums are the reference's one Sum wherever they occur
    x = lambda i: A(ROW * 16 + i)  # noqa: E731
    mean = z3.simplify(z3.Sum(*_partial_sums(4, 16, x)) / 16)
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    kernel = z3.simplify(sum_over(0, 16, j, (x(j) - mean) * (x(j) - mean)) / 16 + x(3) - mean)
    reference_mean = sum_over(0, 16, m, x(m)) / 16
    reference = sum_over(0, 16, m, (x(m) - reference_mean) * (x(m) - reference_mean)) / 16 + x(3) - reference_mean
    k2, r2 = matcher().rewrite(kernel, reference)
    solver = z3.Solver()
    solver.add(HYP, k2 != r2)
    assert solver.check() == z3.unsat


def test_partial_sums_of_another_row_are_not_the_mean():
    x = lambda i: A(ROW * 16 + i)  # noqa: E731
    wrong = lambda i: A(ROW * 16 + 16 + i)  # noqa: E731  (the next row)
    kernel = z3.simplify(x(3) - z3.Sum(*_partial_sums(4, 16, wrong)) / 16)
    m = z3.BitVec("m", 64)
    k2, r2 = matcher().rewrite(kernel, x(3) - sum_over(0, 16, m, x(m)) / 16)
    solver = z3.Solver()
    solver.add(HYP, k2 != r2)
    assert solver.check() != z3.unsat


def test_a_block_max_inside_a_sum_of_exponentials_matches_softmax():
    # softmax's denominator: each thread sums exp(x - M) over its columns, M the max tree over the threads
    x = lambda i: A(ROW * 16 + i)  # noqa: E731
    exp = z3.Function("exp", z3.RealSort(), z3.RealSort())
    j, m = z3.BitVec("j", 64), z3.BitVec("m", 64)
    maxima = [max_over(x(t), 1, 4, j, x(t + 4 * j)) for t in range(4)]
    top = maxima[0]
    for other in maxima[1:]:
        top = z3.If(top >= other, top, other)
    kernel = exp(x(5) - top) / z3.Sum(*_partial_sums(4, 16, lambda i: exp(x(i) - top)))
    row_max = max_over(x(0), 1, 16, m, x(m))
    reference = exp(x(5) - row_max) / sum_over(0, 16, m, exp(x(m) - row_max))
    k2, r2 = matcher().rewrite(z3.simplify(kernel), reference)
    solver = z3.Solver()
    solver.add(HYP, k2 != r2)
    assert solver.check() == z3.unsat


def _unrolled_softmax(leaves: list[int], summands: list[int]) -> tuple[z3.ExprRef, z3.ExprRef]:
    """A row of 16 reduced with no loop (a Triton tl.max / tl.sum over registers and lanes): a max tree over
    the columns `leaves`, a sum of exp(x - max) over `summands`; and the reference softmax of column 5."""
    x = lambda i: A(ROW * 16 + i)  # noqa: E731
    exp = z3.Function("exp", z3.RealSort(), z3.RealSort())
    top = _max_tree([x(i) for i in leaves])
    kernel = exp(x(5) - top) / z3.Sum(*[exp(x(i) - top) for i in summands])
    m = z3.BitVec("m", 64)
    row_max = max_over(x(0), 1, 16, m, x(m))
    return kernel, exp(x(5) - row_max) / sum_over(0, 16, m, exp(x(m) - row_max))


def _proves_equal(kernel: z3.ExprRef, reference: z3.ExprRef) -> bool:
    k2, r2 = matcher().rewrite(kernel, reference)
    solver = z3.Solver()
    solver.add(HYP, k2 != r2)
    return solver.check() == z3.unsat


def test_an_unrolled_max_and_sum_match_softmax():
    assert _proves_equal(*_unrolled_softmax(list(range(16)), list(range(16))))


def test_an_unrolled_max_missing_a_column_is_not_matched():
    assert not _proves_equal(*_unrolled_softmax([10 if i == 11 else i for i in range(16)], list(range(16))))


def test_an_unrolled_sum_with_a_column_twice_is_not_matched():
    assert not _proves_equal(*_unrolled_softmax(list(range(16)), [*range(16), 3]))


def test_an_unrolled_sum_missing_a_column_is_not_matched():
    assert not _proves_equal(*_unrolled_softmax(list(range(16)), [i for i in range(16) if i != 0]))


def _mean_square_plus_eps(columns: list[int]) -> z3.ArithRef:
    """nvcc's fully unrolled Σ x² over a row of 16, as the chain x₀² + (x₁² + (…)), then / 16 + ε."""
    total = z3.RealVal(0)
    for i in columns:
        total = A(ROW * 16 + i) * A(ROW * 16 + i) + total
    return total / 16 + z3.RealVal("1/100000")


def test_an_unrolled_chain_of_squares_matches_a_mean():
    m = z3.BitVec("m", 64)
    reference = sum_over(0, 16, m, A(ROW * 16 + m) * A(ROW * 16 + m)) / 16 + z3.RealVal("1/100000")
    assert _proves_equal(_mean_square_plus_eps(list(range(16))), reference)
    assert not _proves_equal(_mean_square_plus_eps(list(range(15))), reference)   # the last column missed
