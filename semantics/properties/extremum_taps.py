"""A lane that compares a guarded running max (min) with a padded window's unrolled max, proved tap by tap.

After `extremum_windows` a padded max pooling lane compares two comprehension-free terms: the kernel's chain of
taps taken under guards (`if (at >= 0 && at < L) acc = fmaxf(acc, in[at])`, folded by the simplifier into one
tree of Ifs on guards and on comparisons of reads) and the reference's window unrolled,
`max(x[first], x[ρ_1], …, x[ρ_k])`, each ρ_w an If-tree of indices (`w's tap if it is inside, else the first
tap inside`). Asked in one query the solver must bit-blast every index against every other under every case
of the guards and the comparisons (1-D pooling of 8 taps: not decided in minutes). Asked tap by tap it is cheap:

* each kernel guard c is a reference condition d (or its negation):      ⊢ h → (c ⇔ ±d)
* each kernel read x[κ_i] is taken on the path p_i of one leaf of a reference index, and there reads what
  that reference read does:                                               ⊢ h ∧ p_i → κ_i = ρ_w
* each reference read reads a tap the kernel takes:                       ⊢ h → ∨_i (p_i ∧ ρ_w = κ_i)

The lane's claim then follows from the facts in one query where every index and every condition is a fresh
symbol (`compose.by_atoms`): what is left is the order of a few reals. The pairings are guesses read off models
of the hypothesis; a wrong guess only makes a fact fail, and the lane then goes the usual way. Untrusted: every
fact and the final step are kernel theorems (`by_smt`, `by_atoms`, `conj`, `mp`).
"""

from __future__ import annotations

import itertools
from collections import Counter

import z3

from lean_pool.checker import Checker
from semantics.comprehension import COMPREHENSIONS
from semantics.proof import Refused, Theorem
from semantics.proof.rules import conj, mp
from semantics.properties.compose import by_atoms
from semantics.properties.extremum_windows import conditional, real_conditions
from semantics.properties.guarded_reads import MIN_READS, model_of, models_of, proved
from semantics.terms import is_read, reaching, subterms

FACT_S = 20.0      # at most this long for one fact
REFINE_MS = 500    # a refining model asked this long: an unsat query (no other tap) is as hard as the fact
REFINE = 8         # models added to tell apart two conditions that agree on every model so far
MAX_LEAVES = 16    # cases of one reference index (a window's tap, or the first tap inside in a few forms)
GENERAL_S = 2.0    # at most this long for a fact stated for every value of its remainders
INDEX = "a tap's index"
TAPS = "taps"   # the facts of where each kernel tap reads: every reference read's glue step needs them
GUARD = "a kernel guard is a reference condition, or a condition holds or fails throughout"
Leaf = tuple[tuple[z3.BoolRef, ...], z3.BitVecRef]   # (the path's conditions, the index there)


def _reads(term: z3.ExprRef) -> list[z3.ExprRef]:
    return [t for t in subterms(term) if is_read(t)]


def applies(claim: z3.BoolRef, kernel: z3.ExprRef, reference: z3.ExprRef) -> bool:
    """Whether the lane is a padded extremum window: comprehension-free, a kernel that takes taps under guards,
    at least MIN_READS reads on each side, and reference reads at conditional indices."""
    if reaching(claim, COMPREHENSIONS) or not conditional(kernel):
        return False
    mine, theirs = _reads(kernel), _reads(reference)
    return len(mine) >= MIN_READS and len(theirs) >= MIN_READS and \
        any(_is_index_ite(t) for r in theirs for t in subterms(r.arg(0)))


def _leaves(index: z3.BitVecRef, shared: set[int], path: tuple[z3.BoolRef, ...] = ()) -> list[Leaf]:
    """The cases of an index with If-subterms (`base + If(d, a, b)`): each If split in turn, each leaf with the
    conditions that lead to it (negated on else). An If that several reads share (the first tap inside, every
    tap's fallback) stays whole: one fact covers it everywhere. At most MAX_LEAVES, else none."""
    ite = next((t for t in subterms(index) if _is_index_ite(t) and t.get_id() not in shared), None)
    if ite is None:
        return [(path, index)]
    d, then, other = ite.children()
    out = _leaves(z3.substitute(index, (ite, then)), shared, (*path, d)) + \
        _leaves(z3.substitute(index, (ite, other)), shared, (*path, z3.Not(d)))
    return out if len(out) <= MAX_LEAVES else []


def _is_index_ite(t: z3.ExprRef) -> bool:
    return z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_bv(t)


def _pieces(index: z3.BitVecRef) -> list[z3.ExprRef]:
    """The If-free parts of an index and the atoms of its If conditions: what the last step reads as symbols.
    A numeral stays itself: read as a symbol, `If(..) * 512` would be a product of two unknowns, which the
    solver must bit-blast as a full multiplier (a 4 x 4 window's step was undecided in 60 s that way)."""
    if z3.is_bv_value(index):
        return []
    if not any(_is_index_ite(t) for t in subterms(index)):
        return [index]
    if _is_index_ite(index):
        d, then, other = index.children()
        return _atoms(d) + _pieces(then) + _pieces(other)
    return [p for c in index.children() for p in _pieces(c)]


def _atoms(condition: z3.BoolRef) -> list[z3.BoolRef]:
    """A condition's atoms: conjunctions and disjunctions split, negations stripped."""
    if z3.is_not(condition):
        return _atoms(condition.arg(0))
    if z3.is_and(condition) or z3.is_or(condition):
        return [a for c in condition.children() for a in _atoms(c)]
    return [condition]


def _value(model: z3.ModelRef, term: z3.ExprRef):
    value = model.eval(term, model_completion=True)
    return z3.is_true(value) if z3.is_bool(term) else value.as_long()


class _Pairing:
    """The guesses: each kernel read's path, each kernel guard's reference condition, read off models."""

    def __init__(self, kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef):
        self.mine, self.theirs = _reads(kernel), _reads(reference)
        counts = Counter(t.get_id() for r in self.theirs for t in subterms(r.arg(0)) if _is_index_ite(t))
        self.shared = {i for i, n in counts.items() if n > 1}
        self.leaves = [(r, leaf) for r in self.theirs for leaf in _leaves(r.arg(0), self.shared)]
        conditions = {a.get_id(): a for _, (path, _) in self.leaves for c in path for a in _atoms(c)}
        self.conditions = list(conditions.values())
        guards = {a.get_id(): a for c in real_conditions(kernel) for a in _atoms(c)}
        self.guards = list(guards.values())
        self.hypothesis = hypothesis
        self._signatures: dict[tuple[int, int], tuple[bool, ...]] = {}
        self._values: dict[tuple[int, int], bool | int] = {}
        self.pieces = [p for r in self.theirs for p in _pieces(r.arg(0))]
        self.piece_ids = {p.get_id() for p in self.pieces}
        self.models = models_of(hypothesis, self.conditions)
        self.congruences: dict[tuple[int, int], Theorem | None] = {}   # (leaf, tap) -> ⊢ x = y → leaf = tap

    def path(self, read: z3.ExprRef) -> tuple[z3.ExprRef, tuple[z3.BoolRef, ...], z3.BitVecRef] | None:
        """The reference read and its leaf (path, index) where the kernel's read reads what it does in every model
        on the path: of such leaves, the one on the most models."""
        best, count = None, 0
        for r, (path, index) in self.leaves:
            on = [m for m in self.models if all(self.value(m, c) for c in path)]
            if len(on) > count and all(self.value(m, index) == self.value(m, read.arg(0)) for m in on) and \
                    r.decl().eq(read.decl()):
                best, count = (r, path, index), len(on)
        return best

    def candidates(self, under: z3.BoolRef, leaf: z3.BitVecRef, taken: list[tuple[z3.BoolRef, z3.ExprRef]],
                   refine: bool) -> list[tuple[z3.BoolRef, z3.ExprRef]]:
        """The kernel taps (where taken, the reference index each reads there) that the leaf reads in some model
        of `under`: from the models so far, then, with `refine` (a fallback that reads one of several taps), from
        a model of `under` where none of them is (at most REFINE times, each asked briefly); every tap if none."""
        def agrees(m: z3.ModelRef, q: z3.BoolRef, tap: z3.ExprRef) -> bool:
            return self.value(m, q) and self.value(m, leaf) == self.value(m, tap)
        on = [m for m in self.models if self.value(m, under)]
        chosen = [(q, tap) for q, tap in taken if any(agrees(m, q, tap) for m in on)]
        for _ in range(REFINE if refine else 0):
            other = model_of(under, [z3.Not(z3.Or(*[z3.And(q, leaf == tap) for q, tap in chosen]))], REFINE_MS)
            if other is None:
                break
            more = [(q, tap) for q, tap in taken if agrees(other, q, tap) and (q, tap) not in chosen]
            if not more:
                return taken
            chosen += more
        return chosen or taken

    def fixed(self, condition: z3.BoolRef) -> z3.BoolRef | None:
        """The condition, or its negation, where it has one value in every model (then a fact to prove)."""
        values = {self.value(m, condition) for m in self.models}
        if len(values) != 1:
            return None
        fixed = condition if values.pop() else z3.Not(condition)
        other = model_of(self.hypothesis, [z3.Not(fixed)], REFINE_MS)   # it only looked fixed: told apart
        if other is None:
            return fixed
        self.models.append(other)
        return None

    def value(self, model: z3.ModelRef, term: z3.ExprRef):
        """`term` in `model`, memoised: the pairing asks the same leaves and tests of every model many times."""
        key = (id(model), term.get_id())
        if key not in self._values:
            self._values[key] = _value(model, term)
        return self._values[key]

    def signature(self, condition: z3.BoolRef) -> tuple[bool, ...]:
        """The condition's values in the models so far (memoised per model count: refinement adds models)."""
        key = (condition.get_id(), len(self.models))
        if key not in self._signatures:
            self._signatures[key] = tuple(self.value(m, condition) for m in self.models)
        return self._signatures[key]

    def twins(self, fixed: set[int]) -> list[tuple[z3.BoolRef, z3.BoolRef]]:
        """Pairs of reference conditions with one value in every model (a tap test written twice, `URem(1, 4)`
        and `URem(5, 4)`), those that hold or fail throughout left out: said equal, or the symbols of the last
        step forget that they are."""
        out = []
        for _ in range(REFINE):
            first: dict[tuple[bool, ...], z3.BoolRef] = {}
            out = []
            for d in (d for d in self.conditions if d.get_id() not in fixed):
                seen = first.setdefault(self.signature(d), d)
                if seen is not d:
                    out.append((seen, d))
            apart = next((m for m in (model_of(self.hypothesis, [z3.Xor(d1, d2)], REFINE_MS) for d1, d2 in out)
                          if m is not None), None)
            if apart is None:
                return out
            self.models.append(apart)   # two tests that only looked alike: told apart, and asked again
        return out

    def condition(self, guard: z3.BoolRef) -> z3.BoolRef | None:
        """The reference condition, its negation, or (where none is) the conjunction of two or three or its
        negation (a 2-D tap test `(ih | iw) >> 9 == 0`, a 3-D one) that agrees with the kernel's guard in every
        model. Where several do, a model of the hypothesis that tells two of them apart joins the models (at
        most REFINE times): spread-out models rarely fall on the few rows where two taps' tests differ."""
        for _ in range(REFINE):
            mine = self.signature(guard)
            flipped = tuple(not v for v in mine)
            matches = [d if self.signature(d) == mine else z3.Not(d) for d in self.conditions
                       if self.signature(d) in (mine, flipped)]
            if not matches:
                matches = self._conjunctions(mine)
            if len(matches) < 2:
                return matches[0] if matches else None
            apart = model_of(self.hypothesis, [z3.Xor(matches[0], matches[1])])
            if apart is None:
                return matches[0]
            self.models.append(apart)
        return None

    def _conjunctions(self, wanted: tuple[bool, ...]) -> list[z3.BoolRef]:
        """d1 ∧ d2 (or, where no pair is, d1 ∧ d2 ∧ d3: a 3-D tap test `(id | ih | iw) >> 7 == 0`) or its
        negation over reference conditions of distinct signatures, where it is `wanted`."""
        kinds = list({self.signature(d): d for d in self.conditions}.items())
        for size in (2, 3):
            out = []
            for chosen in itertools.combinations(kinds, size):
                both = tuple(all(values) for values in zip(*[one for one, _ in chosen], strict=True))
                if both == wanted:
                    out.append(z3.And(*[d for _, d in chosen]))
                elif tuple(not v for v in both) == wanted:
                    out.append(z3.Not(z3.And(*[d for _, d in chosen])))
            if out:
                return out
        return []


def prove(claim: z3.BoolRef, kernel: z3.ExprRef, reference: z3.ExprRef, hypothesis: z3.BoolRef,
          checker: Checker, timeout_s: float, name: str, record) -> Theorem | None:
    """⊢ claim (the lane's ¬(h ∧ kernel ≠ reference)) through the facts of a pairing of its taps, or None (no
    pairing, a fact or the last step not proved)."""
    if not applies(claim, kernel, reference):
        return None
    pairing = _Pairing(kernel, reference, hypothesis)
    if not pairing.models:
        return None
    statements = []
    for guard in pairing.guards:
        d = pairing.fixed(guard)
        if d is None:
            d = pairing.condition(guard)
            if d is None:
                return None
            d = guard == d
        statements.append((GUARD, z3.Implies(hypothesis, d)))
    fixed = set()
    for d in pairing.conditions:   # a tap inside in every model (a middle tap): said, or the symbols forget it
        known = pairing.fixed(d)
        if known is not None:
            fixed.add(d.get_id())
            statements.append((GUARD, z3.Implies(hypothesis, known)))
    for d1, d2 in pairing.twins(fixed):
        statements.append((GUARD, z3.Implies(hypothesis, d1 == d2)))
    taken, own, glue = [], set(), []
    tags: list[set] = []   # per statement, what it speaks of: a kernel read (-1 - i), a tap, a reference read
    for i, read in enumerate(pairing.mine):
        found = pairing.path(read)
        if found is None:
            return None
        r, path, leaf = found
        p = z3.And(*path) if path else z3.BoolVal(True)
        taken.append((p, leaf))
        own.add((leaf.get_id(), p.get_id()))
        statements.append(("a kernel tap reads where the reference's does",
                           z3.Implies(z3.And(hypothesis, p), read.arg(0) == leaf)))
        tags.append({-1 - i, TAPS})
        glue.append(({-1 - i}, z3.Implies(z3.And(hypothesis, p), read.arg(0) == r.arg(0))))
    tags = [set()] * (len(statements) - len(tags)) + tags
    for r in pairing.theirs:
        glue.append(({r.get_id(), TAPS}, z3.Implies(hypothesis, z3.Or(*[
            z3.And(p, r.arg(0) == read.arg(0)) for (p, _), read in zip(taken, pairing.mine, strict=True)]))))
    facts: dict[str, list[tuple[set[int], Theorem]]] = {GUARD: [], INDEX: []}
    for (what, statement), tag in zip(statements, tags, strict=True):
        # facts with their divisions named (`purify`): index facts 5x faster, and a 2-D tap test merged by nvcc
        # (`(ih | iw) >> 9 == 0`) against the reference's row test in 0.05 s where the plain query is not decided
        # in 30 s
        theorem = _proved(statement, checker, min(timeout_s, FACT_S), f"{name}: {what}", record, purify=True)
        if theorem is None:
            return None
        facts[GUARD if what == GUARD else INDEX].append((tag, theorem))
    for under, case, whole, narrower, reads in _uncovered(pairing, taken, own):
        args = (case, taken, whole, checker, min(timeout_s, FACT_S), name, record)
        theorems = [_cover(pairing, under, *args)]
        if theorems[0] is None:
            theorems = [_cover(pairing, u, *args) for u in narrower] or [None]
        if None in theorems:
            return None
        facts[INDEX] += [(reads, t) for t in theorems]
    # the index facts read tap by tap, as each read's whole index: then the last step is free of arithmetic
    # and the hypothesis as one symbol: every fact and step assumes it whole, and read as it stands it brings the
    # thread's decoding (divisions by the output's sizes) into a step that is only about which tap is which
    pieces = [r.arg(0) for r in pairing.mine] + pairing.pieces + pairing.conditions + [hypothesis]
    glued = []
    for about, statement in glue:   # one at a time, from the facts about its own reads: all at once is far harder
        own_facts = [t for tag, t in facts[INDEX] if tag & about]
        reference = next((r for r in pairing.theirs if r.get_id() in about), None)
        theorem = None if reference is None else \
            _by_leaves(reference, own_facts, (pairing, taken, checker, min(timeout_s, FACT_S), name, record))
        if theorem is None and own_facts:
            theorem = _step(conj(*own_facts), statement, pieces, checker, min(timeout_s, FACT_S), f"{name} (reads)",
                            record)
        if theorem is None:
            theorem = _step(conj(*[t for _, t in facts[INDEX]]), statement, pieces, checker,
                            min(timeout_s, FACT_S), f"{name} (reads)", record)
        if theorem is None:
            return None
        glued.append(theorem)
    indices = conj(*glued)
    whole = [r.arg(0) for r in pairing.mine + pairing.theirs] + pairing.guards + pairing.conditions
    guards = conj(*[t for _, t in facts[GUARD]], indices)
    return _step(guards, claim, whole, checker, timeout_s, f"{name} (tap by tap)", record)


def _by_leaves(reference: z3.ExprRef, premises: list[Theorem], context: tuple) -> Theorem | None:
    """⊢ h → ∨_i (p_i ∧ ρ = κ_i) for one reference read, leaf by leaf of its index: under each leaf's path ρ is
    the leaf, and the leaf is some tap's index by its cover fact, which states only the one pair of subterms
    where the two differ (`_same`); ⊢ x = y → leaf = tap (congruence) brings it back to the whole indices. Each
    step reads every index and pair as a symbol: read as sums, an equality under a disjunction must be
    bit-blasted through the common context (a 4 x 4 window's step was undecided in 20 s that way)."""
    pairing, taken, checker, timeout_s, name, record = context
    h, indices = pairing.hypothesis, [read.arg(0) for read in pairing.mine]
    leaves = _leaves(reference.arg(0), set())
    if not leaves or not premises:
        return None
    steps, cases = [], []
    tests = pairing.conditions + [a for path, _ in leaves for c in path for a in _atoms(c)]   # shared Ifs' too
    stated = {t.get_id() for p in premises for t in subterms(p.conclusion)}   # the pairs the covers state
    for path, leaf in leaves:
        under = z3.And(h, *path)
        reduced = _step(None, z3.Implies(under, reference.arg(0) == leaf), pairing.pieces + tests + [h], checker,
                        timeout_s, f"{name} (a read's case)", record)
        congruent, sides = [], []
        for _, tap in taken:
            same = _same(leaf, tap, pairing.piece_ids)
            if not same.eq(leaf == tap) and same.get_id() in stated:
                key = (leaf.get_id(), tap.get_id())
                if key not in pairing.congruences:   # leaves recur across reads: each pair proved once
                    pairing.congruences[key] = _proved(z3.Implies(same, leaf == tap), checker, GENERAL_S,
                                                       f"{name}: congruence", record)
                congruent.append(pairing.congruences[key])
                sides += [same.arg(0), same.arg(1)]
        if reduced is None or None in congruent:
            return None
        statement = z3.Implies(under, z3.Or(*[z3.And(p, leaf == i) for (p, _), i in zip(taken, indices, strict=True)]))
        atoms = indices + [leaf] + [tap for _, tap in taken] + sides + tests + [h]
        case = _step(conj(*premises, *congruent), statement, atoms, checker, timeout_s, f"{name} (a leaf)", record)
        if case is None:
            return None
        steps += [reduced, case]
        cases.append(leaf)
    statement = z3.Implies(h, z3.Or(*[z3.And(p, reference.arg(0) == i)
                                      for (p, _), i in zip(taken, indices, strict=True)]))
    atoms = indices + [reference.arg(0)] + cases + tests + [h]
    return _step(conj(*steps), statement, atoms, checker, timeout_s, f"{name} (a read by its leaves)", record)


def _step(premise: Theorem | None, claim: z3.BoolRef, atoms: list[z3.ExprRef], checker: Checker, timeout_s: float,
          name: str, record) -> Theorem | None:
    """⊢ claim by `mp` of ⊢ premise → claim (or ⊢ claim without one), proved with `atoms` read as symbols
    (`by_atoms`), or None."""
    distinct = list({a.get_id(): a for a in atoms}.values())
    try:
        step = by_atoms(claim if premise is None else z3.Implies(premise.conclusion, claim), distinct, checker,
                        timeout_s, name)
    except Refused as refused:
        if refused.obligation is not None:
            record(refused.obligation, refused.outcome)
        return None
    record(*step.evidence[0])
    return step if premise is None else mp(step, premise)


def _uncovered(pairing: _Pairing, taken: list[tuple[z3.BoolRef, z3.ExprRef]],
               own: set) -> list[tuple[z3.BoolRef, z3.BitVecRef, bool, list[z3.BoolRef], set[int]]]:
    """The leaves of the reference reads still to be shown to read a tap the kernel takes: each with the
    hypothesis on its path, whether it keeps a shared If, the narrower hypotheses to state it under if it
    fails, and the reference reads it is a leaf of. A leaf that keeps a shared If (the first tap inside) is
    stated once, whatever the read's own path, split on the shared If's own cases instead; a case that mixes
    the fallback's row with a tap's column (`ow + 2` at a window's last column) holds only on the paths of the
    reads that have it, its narrower hypotheses. A kernel tap's own leaf is not stated again."""
    out: dict[tuple[int, int], tuple] = {}
    for r, (path, leaf) in pairing.leaves:
        whole = any(t.get_id() in pairing.shared for t in subterms(leaf))
        cases = _leaves(leaf, set()) if whole else [(path, leaf)]
        for case_path, case in cases:
            p = z3.And(*case_path) if case_path else z3.BoolVal(True)
            key = (case.get_id(), p.get_id())
            if key in own:
                continue
            item = out.setdefault(key, (z3.And(pairing.hypothesis, p), case, whole, {}, set()))
            item[4].add(r.get_id())
            if whole:
                narrower = z3.And(pairing.hypothesis, *path, *case_path)
                item[3][narrower.get_id()] = narrower
    return [(under, case, whole, list(narrower.values()), reads)
            for under, case, whole, narrower, reads in out.values()]


def _cover(pairing: _Pairing, under: z3.BoolRef, case: z3.BitVecRef, taken: list[tuple[z3.BoolRef, z3.ExprRef]],
           whole: bool, checker: Checker, timeout_s: float, name: str, record) -> Theorem | None:
    """⊢ under → the leaf reads one of the kernel taps it reads in some model. A refuted statement's model (a
    window's last column, which spread-out models miss) joins the models and the candidates are read again,
    at most REFINE times."""
    outcomes: list = []
    for _ in range(REFINE):
        candidates = pairing.candidates(under, case, taken, whole)
        statement = z3.Implies(under, z3.Or(*[z3.And(q, _same(case, tap, pairing.piece_ids)) for q, tap in candidates]))
        outcomes.clear()
        theorem = _proved(statement, checker, timeout_s, f"{name}: a reference tap is one the kernel takes",
                          lambda ob, out: (outcomes.append(out), record(ob, out)), purify=True)
        model = outcomes[-1].z3_model if outcomes else None
        if theorem is not None or model is None or len(candidates) == len(taken):
            return theorem
        pairing.models.append(model)
    return None


def _same(a: z3.ExprRef, b: z3.ExprRef, pieces: set[int]) -> z3.BoolRef:
    """a = b, stated as the equality of the one pair of subterms where they differ when they share everything
    else (`base + (o + 3k)` and `base + (o + u)`), down to the pieces the last step reads as symbols: the
    solver need not bit-blast the common context, and in the last step a = b follows by congruence."""
    while z3.is_app(a) and z3.is_app(b) and a.decl().eq(b.decl()) and a.num_args() == b.num_args() > 0 and \
            a.get_id() not in pieces and b.get_id() not in pieces:
        apart = [(x, y) for x, y in zip(a.children(), b.children(), strict=True) if not x.eq(y)]
        if len(apart) != 1:
            break
        a, b = apart[0]
    return a == b


def _remainders(claim: z3.BoolRef) -> list[z3.ExprRef]:
    """The terms a - bvudiv_i(a, c)·c of `claim` (a thread's position in its row, decoded from a flat index)."""
    out = []
    for t in subterms(claim):
        if z3.is_app_of(t, z3.Z3_OP_BSUB) and z3.is_app_of(t.arg(1), z3.Z3_OP_BMUL) and \
                any(z3.is_app(c) and c.decl().name() == "bvudiv_i" for c in t.arg(1).children()):
            out.append(t)
    return out


def _proved(claim: z3.BoolRef, checker: Checker, timeout_s: float, name: str, record,
            purify: bool = False) -> Theorem | None:
    """⊢ claim, first for every value of its remainders (`by_atoms`: a tap's offset in the window is all that
    matters, and the solver need not bit-blast a 64-bit division), else as it stands."""
    remainders = _remainders(claim)
    if remainders:
        try:
            theorem = by_atoms(claim, remainders, checker, min(timeout_s, GENERAL_S), name)
            record(*theorem.evidence[0])
            return theorem
        except Refused:
            pass
    return proved(claim, checker, timeout_s, name, record, purify=purify)
