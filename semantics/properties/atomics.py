"""Atomic accumulation: the final value of an output that threads only ever add into with atomics.

Over the reals addition commutes and associates, so in whatever order the hardware serialises the atomics,
element L ends as `init(L) + Σ v` over every *instance* — a thread, an atomic site, and its loop
iterations — that adds into L. When the reference computes `c · Σ_{lo ≤ m < hi} h(m)` there, the two are
equal if a map φ from the instances adding into L to [lo, hi) is a bijection with v = c·h(φ): then the
kernel's multiset of summands is the reference's, scaled. Three obligations over a symbolic element L:

* into: an instance adding into L has φ in [lo, hi) and value c·h(φ);
* injective: two distinct instances adding into L never share an image;
* onto: ψ(m) names an instance (proved to happen, loop iterations exactly) with φ(ψ(m)) = m.

φ and ψ are hints from untrusted provers (the reindexer and the writer inverse); the obligations decide.
Sums only, of floats, into buffers with zeroed initial contents; other atomics stay `unknown`.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics import preconditions
from semantics.comprehension import COMPREHENSIONS, scaled_sum
from semantics.properties.atomic_terms import (
    Instance,
    Reference,
    digits,
    flat_strides,
    full_inputs,
    is_read,
    linear_guess,
    oriented,
    reference_terms,
    split,
)
from semantics.properties.common import UNKNOWN, VIOLATED, Finding, PropertyResult, mentions_opaque, rename_apart
from semantics.properties.coverage import writer_variables
from semantics.properties.lanes import element_index
from semantics.properties.reductions import Matcher
from semantics.ptx.machine import AXES, Buffer, Launch, Thread
from semantics.ptx.state import Access
from semantics.terms import mentions, reaching, subterms

L = z3.BitVec("L", 64)
RADIX = 1 << 32
OTHER = Thread.fresh("#2")


def accumulated(outputs: list[Access]) -> set[str]:
    """Output buffers some atomic adds into."""
    return {a.buffer for a in outputs if a.kind == "atomic"}


def check(buffer: Buffer, accesses: list[Access], reference: Callable, thread: Thread, launch: Launch,
          launch_ok: z3.BoolRef, shared: set[str], provers, checker: Checker, timeout_s: float, record,
          accepted: dict) -> PropertyResult:
    """Equivalence (values and coverage at once) of a buffer written only by atomic adds."""
    why = _outside_fragment(buffer, accesses)
    if why:
        return PropertyResult(UNKNOWN, [why])
    scaled = _scaled_sum(reference(L))
    if scaled is None:
        return PropertyResult(UNKNOWN, [f"{buffer.name} is accumulated with atomics, but its reference is not one "
                                        f"sum (only sums are matched against atomic accumulation)"])
    def proved(formula: z3.BoolRef, name: str) -> bool:
        ob = Obligation(f"equivalence: {buffer.name} accumulated by atomics: {name}", "equivalence",
                        preconditions.strengthened(formula))
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        return outcome.status == PROVED
    instances = _terms(buffer, accesses, thread, launch_ok, proved, full_inputs(reference_terms(scaled[1])))
    if isinstance(instances, str):
        return PropertyResult(UNKNOWN, [instances])
    job = Accumulation(buffer, instances, *scaled, thread, shared, provers, checker, timeout_s, record)
    why = job.prove()
    if why is None:
        accepted.update(job.hints)
        return PropertyResult()
    finding = job.refute()
    if finding is not None:
        return PropertyResult(VIOLATED, [], [finding])
    return PropertyResult(UNKNOWN, [why])


class Accumulation:
    """The three obligations for one buffer, and a one-hot witness when one of them fails."""

    def __init__(self, buffer: Buffer, instances: list[Instance], scale: z3.ArithRef, total: z3.ExprRef,
                 thread: Thread, shared: set[str], provers, checker: Checker, timeout_s: float, record):
        self.buffer, self.instances, self.scale = buffer, instances, scale
        self.ref = reference_terms(total)
        self.h, self.in_range = self.ref.h, self.ref.in_range
        self.thread, self.shared, self.provers = thread, shared, provers
        self.checker, self.timeout_s, self.record = checker, timeout_s, record
        self.hot = _hot(self.ref)          # the input a one-hot witness sets
        self.instances = [oriented(i, _hot_index(i.value, self.hot)) for i in instances]
        self.hints: dict[str, object] = {}
        self.failure: dict | None = None  # the model of a failed obligation: element L and input index p

    def _proved(self, name: str, formula: z3.BoolRef, read: z3.ExprRef | None) -> bool:
        """`read` is the input element the offending term reads, for a witness."""
        witness = {"L": L, **({"p": read} if read is not None else {})}
        ob = Obligation(f"equivalence: {self.buffer.name} accumulated by atomics: {name}", "equivalence",
                        preconditions.strengthened(z3.And(z3.ULT(L, self.buffer.numel), formula)), witness)
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        if outcome.status == REFUTED and outcome.model and "p" in outcome.model:
            self.failure = outcome.model
        return outcome.status == PROVED

    def prove(self) -> str | None:
        """None when proved; else why not."""
        name, phis, flats = self.buffer.name, [], []
        for n, inst in enumerate(self.instances):
            key = f"atomics:{name}:line{inst.access.line}:phi" + (f".{n}" if len(self.instances) > 1 else "")
            proposed = self._phi(key, inst)
            if proposed is None:
                return f"no reference index could be proposed for the value added at line {inst.access.line}"
            hint, phi = proposed
            flats.append(hint)
            at = list(zip(self.ref.ms, phi, strict=True))
            in_range = z3.substitute(self.in_range, *at)
            kernel, reference = self._matched(key, inst, in_range, self.scale * z3.substitute(self.h, *at))
            into = z3.And(inst.adds_into_l, z3.Not(z3.And(in_range, kernel == reference)))
            if not self._proved(f"the value added at line {inst.access.line} is the reference's term", into,
                                _read_index(inst.value, self.hot)):
                return (f"could not prove that each value atomically added to {name} at line {inst.access.line} is a "
                        f"term of the reference's sum")
            self.hints[key] = hint
            phis.append(phi)
        for (a, phi_a), (b, phi_b) in _pairs(list(zip(self.instances, phis, strict=True))):
            pairs = rename_apart([b.adds_into_l, *phi_b, *b.variables], self.thread, OTHER, self.shared | {str(L)})
            b_adds, b_phi = z3.substitute(b.adds_into_l, *pairs), [z3.substitute(c, *pairs) for c in phi_b]
            same = z3.And([v == z3.substitute(v, *pairs) for v in a.variables]) if a is b else z3.BoolVal(False)
            clash = z3.And(a.adds_into_l, b_adds, *[x == y for x, y in zip(phi_a, b_phi, strict=True)], z3.Not(same))
            if not self._proved(f"no term is added twice (lines {a.access.line}, {b.access.line})", clash,
                                _read_index(a.value, self.hot)):
                return (f"could not prove that no term of the reference is added to {name} twice (lines "
                        f"{a.access.line} and {b.access.line})")
        hits = []
        flat_m = self._flat(self.ref.ms)
        for n, (inst, phi, flat) in enumerate(zip(self.instances, phis, flats, strict=True)):
            key = f"atomics:{name}:line{inst.access.line}:psi" + (f".{n}" if len(self.instances) > 1 else "")
            # the writer of term m of element L solves two equations, element(τ) = L and φ(τ) = m: asked of the
            # inverse prover as one mixed-radix index (only a question; the obligation below checks the answer)
            index = element_index(inst.access, 0)
            question = linear_guess(flat, inst.variables) if reaching(inst.value, COMPREHENSIONS) else flat
            psi = self.provers.inverse(key, index * RADIX + z3.substitute(question, (L, index)),
                                       inst.variables, L * RADIX + flat_m)
            if psi is not None and all(_plain(t) for t in psi.values()):
                hit = z3.And(inst.happens, *[x == m for x, m in zip(phi, self.ref.ms, strict=True)])
                hits.append(z3.substitute(hit, *[(v, psi[str(v)]) for v in inst.variables]))
                self.hints[key] = psi
        onto = z3.And(self.in_range, z3.Not(z3.Or(hits) if hits else z3.BoolVal(False)))
        if not self._proved("every term of the reference is added", onto, _read_index(self.h, self.hot)):
            return f"could not prove that every term of the reference's sum is added to {name}"
        return None

    def _matched(self, key: str, inst: Instance, in_range: z3.BoolRef,
                 reference: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
        """The added value and the reference's term with the reductions they share named by symbols (a row's
        tree over a block against the reference's row Sum, under a proved reindexing: the matcher's
        obligations, recorded), when the value holds comprehensions; else both as they are."""
        if not reaching(inst.value, COMPREHENSIONS):
            return inst.value, reference
        matcher = Matcher(z3.And(inst.adds_into_l, in_range), self.provers.reindex, self.checker, self.timeout_s,
                          self.record, self.hints, f"{key}:match", self.provers.search)
        return matcher.rewrite(inst.value, reference)

    def _phi(self, key: str, inst: Instance) -> tuple[z3.BitVecRef, tuple[z3.BitVecRef, ...]] | None:
        """The prover's hint for the reference indices of the term `inst` adds, and those indices. A nest of
        Sums is asked for its flat row-major index, read off the reference's read of the hot input with the
        outer indices 0 (a question only: the obligations judge the tuple)."""
        ms = self.ref.ms
        if len(ms) == 1:
            phi = self.provers.reindex(key, _reads_at_zero(inst.value), None, _reads_at_zero(self.h), ms[0])
            return None if phi is None or not _plain(phi) else (phi, (phi,))
        strides = flat_strides(self.ref)
        full = [r for r in _reads(self.h) if r.decl() == self.hot and all(mentions(r.arg(0), m) for m in ms)]
        if strides is None or not full:
            return None
        target = z3.substitute(full[0], *[(m, z3.BitVecVal(0, 64)) for m in ms[:-1]])
        flat = self.provers.reindex(key, inst.value, None, target, ms[-1])
        return None if flat is None or not _plain(flat) else (flat, digits(flat, self.ref, strides))

    def _flat(self, index: tuple[z3.BitVecRef, ...]) -> z3.BitVecRef:
        """A tuple of reference indices as one row-major number (for the inverse prover's question)."""
        strides = flat_strides(self.ref) if len(index) > 1 else None
        if strides is None:
            return index[0]
        return sum((s * i for s, i in zip(strides[1:], index[1:], strict=True)), strides[0] * index[0])

    def refute(self) -> Finding | None:
        """A failed obligation's element L and input index p, tried as a one-hot witness."""
        if self.failure is None:
            return None
        element, p = self.failure["L"], self.failure["p"]
        values = one_hot(self.instances, self.scale, self.ref, element, p)
        if values is None or values[0] == values[1]:
            return None
        kernel_value, reference_value, source, first = values
        witness = {"buffer": self.buffer.name, "element_index": element, "inputs": {source: 1},
                   "other_inputs": 0, "kernel_value": float(kernel_value), "reference_value": float(reference_value),
                   "line": self.instances[0].access.line, **first}
        return Finding("equivalence", f"with {source} = 1 and every other input 0, the atomics leave "
                                      f"{self.buffer.name}[{element}] = {float(kernel_value):.9g} but the reference "
                                      f"computes {float(reference_value):.9g}", witness)


def recompute(buffer: Buffer, accesses: list[Access], reference: Callable, thread: Thread, launch_ok: z3.BoolRef,
              element: int, p: int) -> tuple[Fraction, Fraction] | None:
    """A one-hot witness's two values, recomputed from the kernel and the reference alone (`lark check`)."""
    scaled = _scaled_sum(reference(L))
    if _outside_fragment(buffer, accesses) or scaled is None:
        return None
    instances = _terms(buffer, accesses, thread, launch_ok, _unsat, full_inputs(reference_terms(scaled[1])))
    if isinstance(instances, str):
        return None
    values = one_hot(instances, scaled[0], reference_terms(scaled[1]), element, p)
    return values[:2] if values else None


def one_hot(instances: list[Instance], scale: z3.ArithRef, ref: Reference, element: int,
            p: int) -> tuple[Fraction, Fraction, str, dict] | None:
    """Element `element` of the kernel and of the reference when input element p is 1 and every other input 0.

    Each added value (and each term of the reference) is then c·[it reads p], c its value at that input,
    when it is 0 at all-zero inputs and reads the hot input at one index (`_one_read`), so the kernel leaves
    Σ c over the instances adding into the element that read p, and the reference computes
    scale·c·#{ms : term ms reads p}. Both counts are exact, by enumeration with the solver (a few instances at
    most). Returns (kernel, reference, input name, the first instance's thread), or None outside this form."""
    hot = _hot(ref)
    reads = [_one_read(inst.value, hot) for inst in instances]
    ref_read = _one_read(ref.h, hot)
    if ref_read is None or None in reads or any(mentions_opaque(inst.happens) for inst in instances):
        return None
    fix = [(L, z3.BitVecVal(element, 64))]
    kernel_value, first = Fraction(0), None
    for inst, (c, app) in zip(instances, reads, strict=True):
        # (a guard may read inputs too: they take the witness's values there)
        happens = _with_one_hot_inputs(inst.happens, hot, p)
        found = _count(z3.substitute(z3.And(happens, app.arg(0) == p), *fix), inst.variables)
        if found is None:
            return None
        kernel_value += c * len(found)
        first = first or (found[0] if found else None)
    c_ref, app_ref = ref_read
    terms = _count(z3.substitute(z3.And(ref.in_range, app_ref.arg(0) == p), *fix), list(ref.ms))
    if terms is None:
        return None
    reference_value = Fraction(scale.as_fraction()) * c_ref * len(terms)
    return kernel_value, reference_value, f"{app_ref.decl().name()}[{p}]", first or {}


MAX_COUNT = 4


def _count(formula: z3.BoolRef, variables: list[z3.BitVecRef]) -> list[dict] | None:
    """All solutions of `formula` over `variables` (each as the witness's thread and iterations), or None when
    there are more than MAX_COUNT or the solver cannot tell."""
    solver = z3.Solver()
    solver.set("timeout", 10_000)
    solver.add(formula)
    found = []
    while len(found) <= MAX_COUNT:
        answer = solver.check()
        if answer == z3.unsat:
            return found
        if answer != z3.sat:
            return None
        model = solver.model()
        values = [model.eval(v, model_completion=True) for v in variables]
        found.append(_named(variables, values))
        solver.add(z3.Or([v != x for v, x in zip(variables, values, strict=True)]))
    return None


def _named(variables: list[z3.BitVecRef], values: list[z3.ExprRef]) -> dict:
    names = {str(v): x.as_long() for v, x in zip(variables, values, strict=True)}
    out = {"block": [names.get(f"ctaid.{a}", 0) for a in AXES], "thread": [names.get(f"tid.{a}", 0) for a in AXES]}
    out.update({f"iteration {n}": x for n, x in names.items() if not n.startswith(("ctaid.", "tid."))})
    return out if "ctaid.x" in names else {}


def _with_one_hot_inputs(formula: z3.BoolRef, hot: z3.FuncDeclRef, p: int) -> z3.BoolRef:
    """`formula` with every input's contents fixed: `hot`[p] = 1, everything else 0."""
    j = z3.Var(0, z3.BitVecSort(64))  # substitute_funs takes bodies over de Bruijn variables
    contents = {t.decl().name(): t.decl() for t in subterms(formula) if is_read(t)}
    pairs = []
    for decl in contents.values():
        zero = z3.RealVal(0) if decl.range() == z3.RealSort() else z3.BitVecVal(0, decl.range().size())
        one = z3.RealVal(1) if decl.range() == z3.RealSort() else z3.BitVecVal(1, decl.range().size())
        pairs.append((decl, z3.If(j == p, one, zero) if decl == hot else zero))
    return z3.substitute_funs(formula, *pairs) if pairs else formula


def _one_read(term: z3.ExprRef, hot: z3.FuncDeclRef | None) -> tuple[Fraction, z3.ExprRef] | None:
    """(c, X[i]) when term, with the input X (`hot`) one-hot at i, is c·[the hot element is X[i]]: every read
    of X in term is at one index i, term is 0 when every input is 0, and it is the rational c when X[i] is
    1 and every other input 0 (c·X[i] itself, (X[i] - Y[i])², a Huber branch on |X[i] - Y[i]|, ...)."""
    term = z3.simplify(term)
    reads = _reads(term)
    hot_reads = [r for r in reads if r.decl() == hot]
    if _hot_index(term, hot) is None:
        return None
    zero = {r.get_id(): _constant(r, 0) for r in reads}
    at_zero = z3.simplify(z3.substitute(term, *[(r, zero[r.get_id()]) for r in reads]))
    at_one = z3.simplify(z3.substitute(term, *[(r, _constant(r, 1) if r.decl() == hot else zero[r.get_id()])
                                              for r in reads]))
    if not (z3.is_rational_value(at_zero) and at_zero.as_fraction() == 0 and z3.is_rational_value(at_one)):
        return None
    return Fraction(at_one.as_fraction()), hot_reads[0]


def _reads_at_zero(term: z3.ExprRef) -> z3.ExprRef:
    """The question put to the reindexing prover for a term that holds reductions (a row's tree over a block
    against the reference's row Sum): the sum of its input reads with every bound variable 0, so the prover
    pairs first elements (the row's) and its proposal is an index over the instance's own variables. A term
    without binders is asked as it is."""
    reads = [t for t in subterms(term) if is_read(t) and not _plain(t)]
    if not reads:
        return term
    zeros = [z3.BitVecVal(0, 64)] * 8
    return z3.Sum(*[z3.substitute_vars(r, *zeros) for r in reads])


def _plain(hint: z3.ExprRef) -> bool:
    """A hint is an index over the instance's variables: a bound variable or a binder in it (a read taken
    from inside a comprehension's body) would be captured where it is substituted, so it is refused."""
    return not any(z3.is_var(t) or z3.is_quantifier(t) for t in subterms(hint))


def _hot_index(term: z3.ExprRef, hot: z3.FuncDeclRef | None) -> z3.BitVecRef | None:
    """The one index at which `term` reads the input `hot`, if it reads it at exactly one."""
    indices = {r.arg(0).get_id(): r.arg(0) for r in _reads(z3.simplify(term)) if r.decl() == hot}
    return next(iter(indices.values())) if len(indices) == 1 else None


def _constant(read: z3.ExprRef, value: int) -> z3.ExprRef:
    return z3.RealVal(value) if z3.is_real(read) else z3.BitVecVal(value, read.sort().size())


def _reads(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The input elements `term` reads, each once, outside comprehension bodies."""
    seen, out = set(), []
    for t in subterms(term):
        if is_read(t) and t.get_id() not in seen:
            seen.add(t.get_id())
            out.append(t)
    return out


def _hot(ref: Reference) -> z3.FuncDeclRef | None:
    """The input a one-hot witness sets: the first the reference's term reads at an index that moves with
    every one of its indices (the tensor the mean runs over, not a broadcast one)."""
    reads = [r for r in _reads(z3.simplify(ref.h)) if all(mentions(r.arg(0), m) for m in ref.ms)]
    return reads[0].decl() if reads else None


def _read_index(term: z3.ExprRef, hot: z3.FuncDeclRef | None) -> z3.BitVecRef | None:
    read = _one_read(term, hot)
    return read[1].arg(0) if read else None


def _outside_fragment(buffer: Buffer, accesses: list[Access]) -> str | None:
    for a in accesses:
        if a.kind != "atomic":
            return f"{buffer.name} is written both by atomics and by plain stores (line {a.line}); not modelled"
        if a.op != "add" or not buffer.is_float:
            return f"atomic `{a.op}` into {buffer.name} (line {a.line}) is not summarised yet (float sums are)"
        if mentions_opaque(a.values[0]):
            return f"the value atomically added at line {a.line} depends on a value the model does not compute"
    if buffer.init != "zeros":
        return (f"{buffer.name} is accumulated with atomics, so its final value depends on its initial contents; "
                f'declare them in the manifest: [tensors] {buffer.name} = {{ init = "zeros" }}')
    return None


def _scaled_sum(term: z3.ExprRef) -> tuple[z3.ArithRef, z3.ExprRef] | None:
    """(c, S) when the reference element is the Sum S times a rational constant c."""
    return scaled_sum(z3.simplify(term))


def _terms(buffer: Buffer, accesses: list[Access], thread: Thread, launch_ok: z3.BoolRef,
           proved: Callable[[z3.BoolRef, str], bool], own: frozenset[str]) -> list[Instance] | str:
    """Every atomic site's instances, each split into the terms of its value (`atomic_terms.split`)."""
    out = []
    for a in accesses:
        terms = split(_instance(a, thread, launch_ok), proved, f"{buffer.name}.line{a.line}", own)
        if isinstance(terms, str):
            return f"the value atomically added to {buffer.name} at line {a.line} is not matched: {terms}"
        out += terms
    return out


def _unsat(formula: z3.BoolRef, _name: str) -> bool:
    """A fold's obligation decided by a fresh z3 (`lark check` recomputing a witness has no checker)."""
    solver = z3.Solver()
    solver.set("timeout", 30_000)
    solver.add(formula)
    return solver.check() == z3.unsat


def _instance(access: Access, thread: Thread, launch_ok: z3.BoolRef) -> Instance:
    adds = element_index(access, 0) == L
    exact = z3.And(access.guard, *[loop.reached(k) for loop, k in access.loops])
    return Instance(access, writer_variables(access, thread), z3.And(launch_ok, access.guard, adds),
                    z3.And(launch_ok, exact, adds), access.values[0])


def _pairs(items: list) -> list[tuple]:
    return [(items[i], items[j]) for i in range(len(items)) for j in range(i, len(items))]
