"""Value equivalence: every store to an output buffer writes what the reference computes there.

Each vector element of each output store site is one obligation over a symbolic thread: "the thread
stores v at element e and v differs from ref(e)". A model is checked three ways before it is reported:
its loop iterations are really reached, no later store of the same thread overwrites the element, and the
two values still differ when recomputed on real numbers (`semantics.replay`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation, Outcome, model_value
from semantics import arg_extrema
from semantics.axioms import ground_facts
from semantics.comprehension import PROD
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt, negation
from semantics.properties import (
    compose,
    divisions,
    extremum_taps,
    guarded_reads,
    guarded_sums,
    padded_tiles,
    padding,
    prefix,
)
from semantics.properties.common import (
    UNKNOWN,
    VIOLATED,
    Finding,
    PropertyResult,
    escape,
    rename_apart,
    second_thread,
    shaped_thread,
    thread_witness,
)
from semantics.properties.flat_sums import SumFlattener
from semantics.properties.lanes import E_INDEX, element_index, goal, hypothesis_at, lane_name
from semantics.properties.prefix_guards import GuardRemover
from semantics.properties.races import OTHER
from semantics.properties.reductions import Matcher, innermost
from semantics.ptx.machine import Buffer, Thread
from semantics.ptx.state import Access
from semantics.replay import Evaluator, NotConcrete, as_json_number, differ
from semantics.terms import applications, constants, subterms

RESAMPLES = 24
UNIT_RESAMPLES = 24
UNITS = (-1, 1)                                  # a default element (all but a few of a row) in those draws
SMALL = (-2, -1, Fraction(1, 2), 1, 2, 3)        # an element with a value of its own
# draws where every element has one sign: a max started at 0 differs only when all of a row is negative, a
# min started at 0 only when all is positive, and a row of random signs almost never is
SIGNED = {"negative": -1, "positive": 1}
SIGNED_RESAMPLES = 4
UNMATCHED_TIMEOUT_S = 10.0
WINDOW_QUICK_S = 5.0     # the plain query's share of a padded window's lane before it is proved tap by tap
UNIT_FIRST = (PROD, *arg_extrema.DECLS)   # comparisons whose differences unit draws show first


def obligation(access: Access, j: int, buffer: Buffer, reference: Callable, thread: Thread,
               launch_ok: z3.BoolRef, matcher=None, divide=None, pad=None,
               accumulate=None) -> tuple[Obligation, Values]:
    """The store's lane j against the reference. With a `matcher`, comprehensions proved equal on both
    sides are first replaced by shared symbols (their equality is then already established); with
    `divide`, index divisions whose quotient and remainder are proved are replaced by them; with `pad`, sums
    over masked tails are cut to their unmasked range (`semantics.properties.padding`). `Values.claim` is
    what the kernel is asked to prove; it is `goal(...)` itself when no tactic rewrote either side, and
    `Values.steps` are the rewrites, for `compose.close` to undo."""
    index = element_index(access, j)
    hypothesis, value, expected = hypothesis_at(access, j, buffer, launch_ok), access.values[j], reference(index)
    top = goal(access, j, buffer, expected, launch_ok)
    steps: list[compose.Step] = []
    if divide:
        divided, equations = divide(expected, hypothesis, value)
        steps += [compose.Step(value, before, equation) for before, equation in equations]
        expected = divided
    if pad:
        padded, cuts = pad(value, hypothesis)
        for heads, equation in cuts:   # one step per batch of cut sums: undone by its own equation
            cut = z3.substitute(value, *heads.items())
            steps.append(compose.Step(value, expected, equation))
            value = cut
        steps += compose.opaque(value, expected, (padded, expected))
        value = padded
    if accumulate:
        value, expected, accumulated = accumulate(value, expected, hypothesis)
        steps += accumulated
    rewriter = matcher(hypothesis) if matcher else None
    compared = rewriter.rewrite(value, expected) if rewriter else (value, expected)
    steps += rewriter.steps if isinstance(rewriter, prefix.Chain) else compose.opaque(value, expected, compared)
    claim = compose.comparison(hypothesis, *compared)
    formula = negation(claim)
    formula = z3.And(formula, *ground_facts(formula))
    witness = {**thread_witness(thread, access.loops), "element_index": index}
    ob = Obligation(lane_name(buffer.name, j, access.line),
                    "equivalence", formula, witness)
    return ob, Values(value, expected, *compared, getattr(rewriter, "meanings", {}), hypothesis, claim, top,
                      tuple(steps))


@dataclass(frozen=True)
class Values:
    """Both sides of one comparison: as computed (after the division and padding rewrites), and as the matcher
    left them (proved-equal reductions named by symbols, `meanings` saying which reference comprehension each
    symbol was proved equal to)."""

    kernel: z3.ExprRef
    reference: z3.ExprRef
    kernel_named: z3.ExprRef
    reference_named: z3.ExprRef
    meanings: dict[str, z3.ExprRef]
    hypothesis: z3.BoolRef
    claim: z3.BoolRef      # ¬(hypothesis ∧ kernel_named ≠ reference_named): what the kernel proves
    goal: z3.BoolRef       # the lane's top goal (`goal`): the claim itself when no tactic rewrote a side
    steps: tuple[compose.Step, ...] = ()   # the tactics' rewrites from the goal's sides to the claim's

    def for_replay(self) -> tuple[z3.ExprRef, z3.ExprRef, dict[str, z3.ExprRef]]:
        """The pair a replay evaluates. The named pair when every symbol in it has a meaning and the
        hypothesis reads no input: a kernel union then evaluates as the one reference comprehension it was
        proved equal to (under the hypothesis, which the replayed inputs cannot falsify) — one sparse
        expansion instead of one per thread of the block. The computed pair otherwise."""
        own = {str(c) for t in (self.kernel, self.reference) for c in constants(t)}
        named = [self.kernel_named, self.reference_named, *self.meanings.values()]
        if not self.meanings or any(str(c) not in own and str(c) not in self.meanings
                                    for t in named for c in constants(t)) or _reads_input(self.hypothesis):
            return self.kernel, self.reference, {}
        return self.kernel_named, self.reference_named, self.meanings


def _reads_input(term: z3.ExprRef) -> bool:
    return any(z3.is_app(t) and t.num_args() and t.decl().kind() == z3.Z3_OP_UNINTERPRETED for t in subterms(term))


@dataclass(frozen=True)
class Scene:
    """What confirming a counterexample looks at: every output store of the launch, the symbolic thread, the
    launch's constraints, the symbols all threads share, and the checker with its time limit."""

    stores: list[Access]
    thread: Thread
    launch_ok: z3.BoolRef
    shared: frozenset[str]
    checker: Checker
    timeout_s: float


def check(stores: list[Access], buffers: dict[str, Buffer], references: dict[str, Callable], thread: Thread,
          launch_ok: z3.BoolRef, checker: Checker, timeout_s: float, record, provers,
          accepted: dict, shared: frozenset[str] = frozenset(),
          superseded=None) -> PropertyResult:
    """Every lane of every store site against the reference, but for the (id(site), lane) pairs proved
    `superseded` (overwritten later in the block: `semantics.properties.superseded`)."""
    result = PropertyResult()
    scene = Scene(stores, thread, launch_ok, frozenset(shared), checker, timeout_s)
    for access in stores:
        buffer = buffers[access.buffer]
        for j in range(len(access.values)):
            if superseded is not None and (id(access), j) in superseded:
                continue
            key = f"equivalence:{buffer.name}:line{access.line}:lane{j}"

            def matcher(hypothesis, key=key):
                # guards of empty prefixes dropped, a running sum against a prefix (scans), the reference's nests
                # over adjacent dims flattened, zero tails of padded tiles cut, then the general matcher
                return prefix.Chain(GuardRemover(hypothesis, checker, timeout_s, record),
                                    prefix.splitter(hypothesis, key, checker, timeout_s, record),
                                    SumFlattener(hypothesis, key, checker, timeout_s, record),
                                    padded_tiles.TileCutter(hypothesis, key, checker, timeout_s, record),
                                    Matcher(hypothesis, provers.reindex, checker, timeout_s, record, accepted, key,
                                            provers.search))

            def divide(term, hypothesis, kernel, key=key):
                return divisions.rewrite(term, hypothesis, provers.split, checker, timeout_s, record, accepted, key,
                                         kernel)

            def pad(term, hypothesis):
                return padding.rewrite(term, hypothesis, checker, timeout_s, record)

            def accumulate(kernel, reference, hypothesis):
                return guarded_sums.rewrite(kernel, reference, hypothesis, checker, timeout_s, record)

            ob, values = obligation(access, j, buffer, references[buffer.name], thread, launch_ok, matcher, divide,
                                    pad, accumulate)
            # Comprehensions the matcher could not pair are uninterpreted: no proof can come from the solver,
            # only a counterexample (which replay then confirms), so it gets a short budget.
            unmatched = innermost(ob.formula)
            outcome = _prove(ob, values, checker, min(timeout_s, UNMATCHED_TIMEOUT_S) if unmatched else timeout_s,
                             record, result)
            result.goals[(id(access), j)] = values.goal
            if outcome.status == PROVED:
                continue
            finding = None
            if outcome.status == REFUTED:
                finding = _confirm(access, ob, outcome, values, scene) or \
                    _unoverwritten(access, j, ob, values, scene, superseded)
            elif unmatched:
                finding = _concrete_search(access, ob, values, scene)
            if finding:
                result.downgrade(VIOLATED)
                result.findings.append(finding)
                return result
            result.downgrade(UNKNOWN, f"could not prove the value stored to {buffer.name} at line {access.line} "
                                      f"({outcome.reason or 'the counterexample did not replay on real numbers'})")
    return result


def _prove(ob: Obligation, values: Values, checker: Checker, timeout_s: float, record,
           result: PropertyResult) -> Outcome:
    """`by_smt` of the lane's claim under its axiom instances (the very obligation `ob`); for a window of
    guarded reads that one query does not decide within WINDOW_QUICK_S, its proof read by read
    (`semantics.properties.guarded_reads`), and the full query only if that fails; for a padded max window
    that the one query did not prove, its proof tap by tap (`extremum_taps`). A proved lane's
    theorem joins `result.theorems`; when a tactic rewrote a side (the claim is not the goal), the rewrites
    are undone by kernel rules (`compose.close`) and the theorem stating the goal joins them, or, where a
    tactic gave no equation for its rewrite, the claim's theorem is kept in `result.rewritten` under the goal
    it stands for (`semantics.verdict.established`)."""
    sides = (values.claim, values.kernel_named, values.reference_named)
    window = guarded_reads.applies(*sides)
    first = _by_smt(ob, values, checker, min(timeout_s, WINDOW_QUICK_S) if window else timeout_s, record)
    if window and isinstance(first, Outcome) and first.status != REFUTED:
        # one query over a padded window's taps is far slower than the taps one by one
        theorem = guarded_reads.prove(*sides, values.hypothesis, checker, timeout_s, ob.name, record)
        first = theorem if theorem is not None else _by_smt(ob, values, checker, timeout_s, record)
    elif isinstance(first, Outcome) and first.status != REFUTED and extremum_taps.applies(*sides):
        # a padded max window, tap by tap: only once the one query has failed (it is the usual way)
        first = extremum_taps.prove(*sides, values.hypothesis, checker, timeout_s, ob.name, record) or first
    if isinstance(first, Outcome):
        return first
    theorem, outcome = first, first.evidence[0][1]   # a read-by-read proof's last step: `mp` lists it first
    result.theorems.append(theorem)
    if theorem.states(values.goal):
        return outcome
    closed = compose.close(theorem, values.hypothesis, values.steps)
    if closed is not None and closed.states(values.goal):
        result.theorems.append(closed)
    else:
        result.rewritten[values.goal.get_id()] = theorem
    return outcome


def _by_smt(ob: Obligation, values: Values, checker: Checker, timeout_s: float, record) -> Theorem | Outcome:
    """⊢ the lane's claim by `by_smt` under its axiom instances, or the outcome that refused it (recorded)."""
    try:
        theorem = by_smt(values.claim, checker, timeout_s, ob.name, ob.prop, with_facts=True, witness=ob.witness)
    except Refused as refused:
        record(refused.obligation, refused.outcome)
        return refused.outcome
    record(*theorem.evidence[0])
    return theorem


def _unoverwritten(access: Access, lane: int, ob: Obligation, values: Values, scene: Scene,
                   superseded) -> Finding | None:
    """When the first counterexample's element is overwritten later in its block, ask once more among the
    elements no proposed later writer overwrites; the model is confirmed as any other."""
    overwrites = getattr(superseded, "overwrites", {}).get((id(access), lane))
    if overwrites is None:
        return None
    index = element_index(access, lane)
    guided = Obligation(f"{ob.name} (an element not overwritten later)", ob.prop,
                        z3.And(ob.formula, z3.Not(z3.substitute(overwrites, (E_INDEX, index)))), ob.witness)
    outcome = scene.checker.check(guided, scene.timeout_s)
    return _confirm(access, guided, outcome, values, scene) if outcome.status == REFUTED else None


def _concrete_search(access: Access, ob: Obligation, values: Values, scene: Scene) -> Finding | None:
    """When the solver cannot decide a comparison of reductions, look for a witness directly: one thread that
    performs the store (a model of the obligation's hypothesis), then the usual confirmation — reachability,
    no overwrite, and both values recomputed on real numbers with the comprehensions expanded, at the
    model's inputs and at random ones. A witness found this way is as concrete as any other."""
    solver = z3.Solver()
    solver.set("timeout", int(min(scene.timeout_s, UNMATCHED_TIMEOUT_S) * 1000))
    claim = ob.formula.arg(0) if z3.is_and(ob.formula) else ob.formula   # the hypothesis and the difference
    solver.add(claim)
    status = solver.check()
    if status == z3.unknown:   # the difference is too hard for the solver: any storing thread will do
        solver = z3.Solver()
        solver.set("timeout", int(min(scene.timeout_s, UNMATCHED_TIMEOUT_S) * 1000))
        solver.add(hypothesis_of(ob.formula))
        status = solver.check()
    if status != z3.sat:
        return None
    model = solver.model()
    found = {name: model_value(model.eval(term, model_completion=True)) for name, term in ob.witness.items()}
    candidate = Outcome(REFUTED, "concrete search", 0.0, found, z3_model=model)
    return _confirm(access, ob, candidate, values, scene)


def hypothesis_of(formula: z3.BoolRef) -> z3.BoolRef:
    """The hypothesis of an equivalence obligation, And(And(hypothesis, value != expected), *facts): without
    the comparison, whose uninterpreted reductions can keep the solver from finding any model at all."""
    premise = formula.arg(0) if z3.is_and(formula) else formula
    return premise.arg(0) if z3.is_and(premise) and premise.num_args() == 2 else premise


def _fixes(ob: Obligation, model: dict) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    return [(t, z3.BitVecVal(model[n], t.size())) for n, t in ob.witness.items()
            if n != "element_index" and z3.is_const(t)]


def _confirm(access: Access, ob: Obligation, outcome, values: Values, scene: Scene) -> Finding | None:
    fixes = _fixes(ob, outcome.model)
    if access.loops and scene.checker.check(Obligation("reach", "equivalence", escape(access.loops, fixes)),
                                            scene.timeout_s).status != PROVED:
        return None
    if _may_be_overwritten(access, outcome.model, fixes, scene):
        return None
    replay = _replay(*values.for_replay(), outcome.z3_model, fixes)
    if replay is None:
        return None
    kernel_value, reference_value, reads = replay
    index = outcome.model["element_index"]
    # (name, None) is the value of every element of `name` not listed (a long reduction replayed sparsely)
    inputs = {f"{name}[{'*' if i is None else i}]": as_json_number(v)
              for (name, i), v in sorted(reads.items(), key=lambda kv: (kv[0][0], kv[0][1] is None, kv[0][1] or 0))}
    msg = (f"{access.buffer}[{index}] is written as {float(kernel_value):.9g} by the store at line {access.line} "
           f"but the reference computes {float(reference_value):.9g}")
    witness = {**shaped_thread(outcome.model), "buffer": access.buffer, "element_index": index,
               "inputs": inputs, "kernel_value": float(kernel_value), "reference_value": float(reference_value),
               "line": access.line}
    return Finding("equivalence", msg, witness)


def _may_be_overwritten(access: Access, model: dict, fixes: list, scene: Scene) -> bool:
    """Another store could write the same element at the same time or later: of the same thread (another
    site, or this site at another iteration), or of another thread (of another block, or of this block in
    this barrier interval or a later one). Then this store's value need not be final, and the model is not
    a witness."""
    index = model["element_index"]
    thread_vars = {str(v) for v in scene.thread.variables()}
    thread_fixes = [(t, v) for t, v in fixes if str(t) in thread_vars]
    stores = scene.stores
    others = [s for s in stores if s.buffer == access.buffer and (s is not access or s.loops)]
    cases = [_other_thread_writes(access, s, index, fixes, scene) for s in stores if s.buffer == access.buffer]
    for s in others:
        renamed = [(k, z3.FreshConst(k.sort(), "k")) for _, k in s.loops] if s is access else []
        guard, offset = (z3.substitute(t, *renamed) if renamed else t for t in (s.guard, s.offset))
        shift = s.elem_bytes.bit_length() - 1
        first = z3.LShR(offset, shift)
        hit = z3.And(z3.ULE(first, index), z3.ULT(index, first + len(s.values) if s.values else first + 1))
        # this site at another iteration: the witness's own iterations are fixed, the renamed ones are free
        differs = z3.substitute(z3.Or([z3.substitute(k, *renamed) != k for _, k in s.loops]), *fixes) \
            if s is access else z3.BoolVal(True)
        cases.append(z3.And(guard, hit, differs))
    probe = z3.substitute(z3.Or(cases), *thread_fixes) if thread_fixes else z3.Or(cases)
    return scene.checker.check(Obligation("overwrite", "equivalence", probe), scene.timeout_s).status != PROVED


def _hits(store: Access, guard: z3.BoolRef, offset: z3.BitVecRef, index: int) -> z3.BoolRef:
    """The store (performed with this guard and byte offset) writes element `index`."""
    first = z3.LShR(offset, store.elem_bytes.bit_length() - 1)
    return z3.And(guard, z3.ULE(first, index), z3.ULT(index, first + max(len(store.values), 1)))


def _other_thread_writes(access: Access, store: Access, index: int, fixes: list, scene: Scene) -> z3.BoolRef:
    """Some other thread of the launch performs `store` on element `index` not ordered before the witness's
    `access`: in another block (no order at all), or in the same block in the same barrier interval or a
    later one."""
    thread, shared = scene.thread, scene.shared
    guard, offset, _ = second_thread(store, thread, OTHER, shared)
    other_ok = z3.substitute(scene.launch_ok, *rename_apart([scene.launch_ok], thread, OTHER, shared))
    mine = z3.substitute(access.phase_term, *fixes) if access.phase_term is not None and fixes else \
        access.phase_term if access.phase_term is not None else z3.BitVecVal(access.phase, 64)
    theirs = store.phase_term if store.phase_term is not None else z3.BitVecVal(store.phase, 64)
    theirs = z3.substitute(theirs, *rename_apart([theirs], thread, OTHER, shared))
    not_before = z3.Or(z3.Not(thread.same_block(OTHER)), z3.UGE(theirs, mine))
    return z3.And(other_ok, z3.Not(thread.same_thread(OTHER)), not_before,
                  _hits(store, guard, offset, index))


def _replay(value, expected, definitions: dict[str, z3.ExprRef], model: z3.ModelRef, fixes):
    """(kernel value, reference value, inputs read) on real numbers, first with the model's inputs, then
    with drawn ones at the same thread; None when no evaluation shows a difference that floats can show (a
    witness reports both values as numbers). Two kinds of draws: random ratios, and 'unit' draws that give
    every default element ±1 and the few others small values; last, draws of one sign for every element. A
    running product over a long row overflows
    or vanishes at almost any ratios, and an argmax's first and last index differ only on a tie, so when a Prod
    or an arg-extremum fold is compared the unit draws come first."""
    concrete_value = z3.substitute(value, *fixes) if fixes else value
    concrete_expected = z3.substitute(expected, *fixes) if fixes else expected
    products = applications(concrete_value, UNIT_FIRST) or applications(concrete_expected, UNIT_FIRST)
    draws = ["unit"] * UNIT_RESAMPLES + ["ratio"] * RESAMPLES if products else \
        ["ratio"] * RESAMPLES + ["unit"] * UNIT_RESAMPLES
    draws += [sign for sign in SIGNED for _ in range(SIGNED_RESAMPLES)]
    rng = random.Random(0)
    overrides: dict = {}
    for draw in (*draws, None):
        ev = Evaluator(model, dict(overrides), definitions)
        try:
            a, b = ev.value(concrete_value), ev.value(concrete_expected)
            if z3.is_bv(concrete_value):   # an integer output (argmax's int64 indices), read signed as torch's
                a, b = _signed(a, concrete_value.size()), _signed(b, concrete_value.size())
        except NotConcrete:
            a = b = None
        if a is not None and differ(a, b) and _shown(a, b):
            return a, b, ev.reads
        if draw is not None:
            overrides = {key: _drawn(rng, draw, key[1] is None) for key in ev.reads}
    return None


def _signed(v: int, width: int) -> int:
    return v - (1 << width) if v >> (width - 1) & 1 else v


def _drawn(rng: random.Random, draw: str, default: bool) -> Fraction:
    if draw in SIGNED:
        return SIGNED[draw] * Fraction(rng.randint(1, 400), rng.randint(1, 100))
    if draw == "ratio":
        return Fraction(rng.choice([-1, 1]) * rng.randint(1, 400), rng.randint(1, 100))
    return Fraction(rng.choice(UNITS if default else SMALL))


def _shown(a: object, b: object) -> bool:
    """Whether two values that differ still differ as floats, both finite."""
    x, y = float(a), float(b)
    return math.isfinite(x) and math.isfinite(y) and x != y
