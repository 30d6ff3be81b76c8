"""A lane that compares sums of guarded reads, proved read by read: which tap is taken, and where it reads.

After `guarded_sums` a padded window's lane compares two comprehension-free sums of terms
`If(g, x[i], 0)`: the kernel's taps (its own index arithmetic, 32-bit offsets, byte addresses) and the
reference's unrolled window. Asked in one query, the solver must find the pairing itself while
bit-blasting every index against every other (a 1-D pooling window of 8 taps: over z3's resource limit).
Asked pair by pair it is cheap: for each kernel read and the reference read it is paired with, two small
bit-vector facts, ⊢ h → (g ⇔ g') and ⊢ h ∧ g → i = i'; the lane's claim then follows from them in one
query where every read is already matched (`mp` of ⊢ facts → claim with the facts' conjunction).

The pairing is a guess (reads whose guard and index agree in a few models of the hypothesis); a wrong guess
only makes a fact fail, and the lane then goes the usual way. Untrusted: every fact and the final step are
kernel theorems (`by_smt`, `conj`, `mp`).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import z3

from lean_pool.checker import Checker
from semantics.checkers import by_atoms
from semantics.comprehension import COMPREHENSIONS
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt, conj, mp
from semantics.terms import constants, is_read, reaching, subterms

MIN_READS = 2      # fewer guarded reads: the plain query is small already
PLAIN_READS = 9    # bare reads on each side that make a window (a 3 × 3 one) rather than an elementwise lane
MODELS = 4         # models of the hypothesis the pairing is read off
FACT_S = 20.0      # at most this long for one fact


def reads(term: z3.ExprRef) -> list[tuple[z3.BoolRef, z3.ExprRef]]:
    """(taken, x[i]) of each read of each outermost guarded tap in `term` (`_guarded`): x[i] itself (taken
    always: a tap the compiler knows is inside), a product of taps, or If(g, r, 0) / If(g, 0, r) around one
    (the tap tests of a 2-D window, one per loop level)."""
    out, seen, todo = [], set(), [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        found = _guarded(t)
        if found is not None:
            out.extend(found)
        elif z3.is_app(t):
            todo.extend(reversed(t.children()))
    return out


def _guarded(t: z3.ExprRef) -> list[tuple[z3.BoolRef, z3.ExprRef]] | None:
    """(taken, read) of each read of a guarded tap `t`: a read, a product of reads (a convolution's x·w), or
    If(g, tap, 0) / If(g, 0, tap) around one (taken when g, resp. ¬g, and the tap's own condition hold)."""
    if is_read(t):
        return [(z3.BoolVal(True), t)]
    if z3.is_mul(t) and z3.is_real(t):
        factors = [_guarded(f) for f in t.children()]
        return None if any(f is None for f in factors) else [read for f in factors for read in f]
    if not (z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_real(t)):
        return None
    g, a, b = t.children()
    for inner, other, test in ((a, b, g), (b, a, z3.Not(g))):
        if z3.is_rational_value(other) and other.as_fraction() == 0:
            found = _guarded(inner)
            if found is not None:
                return [((test if z3.is_true(taken) else z3.And(test, taken)), read) for taken, read in found]
    return None


def _models(hypothesis: z3.BoolRef) -> list[z3.ModelRef]:
    """A few models of the hypothesis, at spread-out values of its bit-vector symbols."""
    symbols = sorted((str(c), c) for c in constants(hypothesis) if z3.is_bv(c))
    rng, out = random.Random(0), []
    for _ in range(MODELS * 2):
        model = model_of(hypothesis, [z3.ULE(c, rng.randrange(1 << min(c.size(), 24))) for _, c in symbols])
        if model is not None:
            out.append(model)
        if len(out) == MODELS:
            break
    return out


def model_of(hypothesis: z3.BoolRef, more: list[z3.BoolRef], timeout_ms: int = 2000) -> z3.ModelRef | None:
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(hypothesis, *more)
    return solver.model() if solver.check() == z3.sat else None


def models_of(hypothesis: z3.BoolRef, conditions: list[z3.BoolRef]) -> list[z3.ModelRef]:
    """`_models`, and a model of the hypothesis on each side of each condition that has one: the border cases
    (a padded window's first rows), where spread-out models all fall inside."""
    out = _models(hypothesis)
    for d in conditions:
        out += [m for m in (model_of(hypothesis, [d]), model_of(hypothesis, [z3.Not(d)])) if m is not None]
    return out


def _signature(model: z3.ModelRef, taken: z3.BoolRef, read: z3.ExprRef) -> tuple:
    on = z3.is_true(model.eval(taken, model_completion=True))
    return (read.decl().name(), on, model.eval(read.arg(0), model_completion=True).as_long() if on else None)


def pairing(kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef) -> list[tuple] | None:
    """Each kernel read with the one reference read that agrees with it in every model, or None."""
    mine, theirs = reads(kernel), reads(reference)
    if len(mine) < MIN_READS or len(mine) != len(theirs):
        return None
    models = _models(hypothesis)
    if not models:
        return None
    keys = [[tuple(_signature(m, *r) for m in models) for r in side] for side in (mine, theirs)]
    free = list(range(len(theirs)))
    pairs = []
    for k, key in enumerate(keys[0]):
        match = next((r for r in free if keys[1][r] == key), None)
        if match is None:
            return None
        free.remove(match)
        pairs.append((mine[k], theirs[match]))
    return pairs


def applies(claim: z3.BoolRef, kernel: z3.ExprRef, reference: z3.ExprRef) -> bool:
    """Whether the lane is a window: comprehension-free, as many reads on each side (at least MIN_READS) and
    some of them guarded, or at least PLAIN_READS bare ones summed with no real If on either side (a window
    nvcc proved inside, the reference's unrolled: `guarded_sums.plain_window`; a max window's Ifs leave it to
    `extremum_taps`). Elementwise lanes (a few bare reads on both sides) never are."""
    if reaching(claim, COMPREHENSIONS):
        return False
    mine, theirs = reads(kernel), reads(reference)
    return len(mine) >= MIN_READS and len(mine) == len(theirs) and \
        (any(not z3.is_true(taken) for taken, _ in mine + theirs) or
         len(mine) >= PLAIN_READS and not _tests(kernel) and not _tests(reference))


def prove(claim: z3.BoolRef, kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef,
          checker: Checker, timeout_s: float, name: str, record) -> Theorem | None:
    """⊢ claim (the lane's ¬(h ∧ kernel ≠ reference)) through the facts of a pairing of its guarded reads, or
    None (no pairing, a fact or the last step not proved)."""
    if reaching(claim, COMPREHENSIONS):
        return None
    pairs = pairing(kernel, reference, hypothesis)
    if pairs is None:
        return None
    facts = []
    for (g, x), (g2, x2) in pairs:
        same_read = z3.Implies(z3.And(hypothesis, g), x == x2)
        for what, fact in (("is taken where the reference's is", z3.Implies(hypothesis, g == g2)),
                           ("reads what the reference's does", same_read)):
            theorem = proved(fact, checker, min(timeout_s, FACT_S), f"{name}: a kernel tap {what}", record,
                             purify=True)
            if theorem is None:
                return None
            facts.append(theorem)
    together = conj(*facts)
    step = _by_atoms(z3.Implies(together.conclusion, claim), [hypothesis, *_tests(kernel), *_tests(reference),
                     *(read for pair in pairs for _, read in pair)], checker, timeout_s, name, record) or \
        proved(z3.Implies(together.conclusion, claim), checker, timeout_s, f"{name} (read by read)", record,
               with_facts=True)
    return None if step is None else mp(step, together)


def _tests(term: z3.ExprRef) -> list[z3.BoolRef]:
    """The conditions of the real-valued Ifs in `term` (its taps' tests)."""
    return [t.arg(0) for t in subterms(term) if z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_real(t)]


def _by_atoms(claim: z3.BoolRef, atoms: list[z3.ExprRef], checker: Checker, timeout_s: float, name: str,
              record) -> Theorem | None:
    """The last step with the hypothesis, the taps' tests and the reads as atoms (`checkers.by_atoms`): once
    every read is matched, what is left is arithmetic over them, which the index terms only slow down; None
    when that does not prove it (the facts may need the axiom instances)."""
    unique = list({t.get_id(): t for t in atoms}.values())
    return _recorded(lambda: by_atoms(claim, unique, checker, timeout_s, f"{name} (read by read, over atoms)",
                                      "equivalence"), record)


def proved(claim: z3.BoolRef, checker: Checker, timeout_s: float, name: str, record, with_facts: bool = False,
           purify: bool = False) -> Theorem | None:
    """⊢ claim by `by_smt` (its obligation recorded either way), or None."""
    return _recorded(lambda: by_smt(claim, checker, timeout_s, name, "equivalence", with_facts=with_facts,
                                    purify=purify), record)


def _recorded(make: Callable[[], Theorem], record) -> Theorem | None:
    """The theorem `make` returns with its obligation recorded, or None with the refused one recorded."""
    try:
        theorem = make()
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return None
    record(*theorem.evidence[0])
    return theorem

