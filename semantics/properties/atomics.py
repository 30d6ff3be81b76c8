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
from dataclasses import dataclass
from fractions import Fraction

import z3

from lean_pool.checker import PROVED, REFUTED, Checker, Obligation
from semantics.comprehension import scaled_sum
from semantics.properties.common import UNKNOWN, VIOLATED, Finding, PropertyResult, mentions_opaque, rename_apart
from semantics.properties.coverage import writer_variables
from semantics.properties.equivalence import element_index
from semantics.properties.reductions import open_family
from semantics.ptx.machine import AXES, Buffer, Launch, Thread
from semantics.ptx.state import Access
from semantics.terms import subterms

L = z3.BitVec("L", 64)
RADIX = 1 << 32
OTHER = Thread.fresh("#2")


@dataclass(frozen=True)
class Instance:
    """One atomic site as performed by the symbolic thread (and its loop iterations)."""

    access: Access
    variables: list[z3.BitVecRef]   # thread coordinates and loop iterations
    adds_into_l: z3.BoolRef         # the instance happens (over-approximated in loops) and adds into L
    happens: z3.BoolRef             # the instance happens, loop reachability exact

    @property
    def value(self) -> z3.ArithRef:
        return self.access.values[0]


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
    job = Accumulation(buffer, [_instance(a, thread, launch_ok) for a in accesses], *scaled, thread, shared,
                       provers, checker, timeout_s, record)
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
        ref = open_family(total, "m!", split=False)
        self.h, self.m = ref.lanes[0], ref.var
        self.in_range = z3.And(z3.ULE(ref.lo, self.m), z3.ULT(self.m, ref.hi))
        self.thread, self.shared, self.provers = thread, shared, provers
        self.checker, self.timeout_s, self.record = checker, timeout_s, record
        self.hints: dict[str, object] = {}
        self.failure: dict | None = None  # the model of a failed obligation: element L and input index p

    def _proved(self, name: str, formula: z3.BoolRef, read: z3.ExprRef | None) -> bool:
        """`read` is the input element the offending term reads, for a witness."""
        witness = {"L": L, **({"p": read} if read is not None else {})}
        ob = Obligation(f"equivalence: {self.buffer.name} accumulated by atomics: {name}", "equivalence",
                        z3.And(z3.ULT(L, self.buffer.numel), formula), witness)
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        if outcome.status == REFUTED and outcome.model and "p" in outcome.model:
            self.failure = outcome.model
        return outcome.status == PROVED

    def prove(self) -> str | None:
        """None when proved; else why not."""
        name, phis = self.buffer.name, []
        for inst in self.instances:
            key = f"atomics:{name}:line{inst.access.line}:phi"
            phi = self.provers.reindex(key, inst.value, None, self.h, self.m)
            if phi is None:
                return f"no reference index could be proposed for the value added at line {inst.access.line}"
            into = z3.And(inst.adds_into_l, z3.Not(z3.And(z3.substitute(self.in_range, (self.m, phi)),
                                                          inst.value == self.scale * z3.substitute(self.h,
                                                                                                   (self.m, phi)))))
            if not self._proved(f"the value added at line {inst.access.line} is the reference's term", into,
                                _read_index(inst.value)):
                return (f"could not prove that each value atomically added to {name} at line {inst.access.line} is a "
                        f"term of the reference's sum")
            self.hints[key] = phi
            phis.append(phi)
        for (a, phi_a), (b, phi_b) in _pairs(list(zip(self.instances, phis, strict=True))):
            pairs = rename_apart([b.adds_into_l, phi_b, *b.variables], self.thread, OTHER, self.shared | {str(L)})
            b_adds, b_phi = z3.substitute(b.adds_into_l, *pairs), z3.substitute(phi_b, *pairs)
            same = z3.And([v == z3.substitute(v, *pairs) for v in a.variables]) if a is b else z3.BoolVal(False)
            clash = z3.And(a.adds_into_l, b_adds, phi_a == b_phi, z3.Not(same))
            if not self._proved(f"no term is added twice (lines {a.access.line}, {b.access.line})", clash,
                                _read_index(a.value)):
                return (f"could not prove that no term of the reference is added to {name} twice (lines "
                        f"{a.access.line} and {b.access.line})")
        hits = []
        for inst, phi in zip(self.instances, phis, strict=True):
            key = f"atomics:{name}:line{inst.access.line}:psi"
            # the writer of term m of element L solves two equations, element(τ) = L and φ(τ) = m: asked of the
            # inverse prover as one mixed-radix index (only a question; the obligation below checks the answer)
            index = element_index(inst.access, 0)
            psi = self.provers.inverse(key, index * RADIX + z3.substitute(phi, (L, index)), inst.variables,
                                       L * RADIX + self.m)
            if psi is not None:
                hits.append(z3.substitute(z3.And(inst.happens, phi == self.m),
                                          *[(v, psi[str(v)]) for v in inst.variables]))
                self.hints[key] = psi
        onto = z3.And(self.in_range, z3.Not(z3.Or(hits) if hits else z3.BoolVal(False)))
        if not self._proved("every term of the reference is added", onto, _read_index(self.h)):
            return f"could not prove that every term of the reference's sum is added to {name}"
        return None

    def refute(self) -> Finding | None:
        """A failed obligation's element L and input index p, tried as a one-hot witness."""
        if self.failure is None:
            return None
        element, p = self.failure["L"], self.failure["p"]
        values = one_hot(self.instances, self.scale, self.h, self.m, self.in_range, element, p)
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
    job = Accumulation(buffer, [_instance(a, thread, launch_ok) for a in accesses], *scaled, thread, set(), None,
                       None, 0.0, None)
    values = one_hot(job.instances, job.scale, job.h, job.m, job.in_range, element, p)
    return values[:2] if values else None


def one_hot(instances: list[Instance], scale: z3.ArithRef, h: z3.ArithRef, m: z3.BitVecRef, in_range: z3.BoolRef,
            element: int, p: int) -> tuple[Fraction, Fraction, str, dict] | None:
    """Element `element` of the kernel and of the reference when input element p is 1 and every other input 0.

    Each added value is then c·[it reads p], so the kernel leaves Σ c over the instances adding into the element
    that read p, and the reference computes scale·#{m : term m reads p}. Both counts are exact, by enumeration
    with the solver (a few instances at most). Returns (kernel, reference, input name, the first instance's
    thread), or None outside this form."""
    reads = [_one_read(inst.value) for inst in instances]
    ref_read = _one_read(h)
    if ref_read is None or None in reads or len({r[1].decl() for r in [*reads, ref_read]}) != 1 \
            or any(mentions_opaque(inst.happens) for inst in instances):
        return None
    fix = [(L, z3.BitVecVal(element, 64))]
    kernel_value, first = Fraction(0), None
    for inst, (c, app) in zip(instances, reads, strict=True):
        # (a guard may read inputs too: they take the witness's values there)
        happens = _with_one_hot_inputs(inst.happens, ref_read[1].decl(), p)
        found = _count(z3.substitute(z3.And(happens, app.arg(0) == p), *fix), inst.variables)
        if found is None:
            return None
        kernel_value += c * len(found)
        first = first or (found[0] if found else None)
    c_ref, app_ref = ref_read
    terms = _count(z3.substitute(z3.And(in_range, app_ref.arg(0) == p), *fix), [m])
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
    contents = {t.decl().name(): t.decl() for t in subterms(formula) if _is_read(t)}
    pairs = []
    for decl in contents.values():
        zero = z3.RealVal(0) if decl.range() == z3.RealSort() else z3.BitVecVal(0, decl.range().size())
        one = z3.RealVal(1) if decl.range() == z3.RealSort() else z3.BitVecVal(1, decl.range().size())
        pairs.append((decl, z3.If(j == p, one, zero) if decl == hot else zero))
    return z3.substitute_funs(formula, *pairs) if pairs else formula


def _one_read(term: z3.ExprRef) -> tuple[Fraction, z3.ExprRef] | None:
    """(c, X[i]) when term is c·X[i]: one element of one input, scaled by a rational constant."""
    term = z3.simplify(term)
    if _is_read(term):
        return Fraction(1), term
    if z3.is_mul(term) and term.num_args() == 2:
        for c, read in (term.children(), reversed(term.children())):
            if z3.is_rational_value(c) and _is_read(read):
                return Fraction(c.as_fraction()), read
    return None


def _is_read(term: z3.ExprRef) -> bool:
    return z3.is_app(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED and term.num_args() == 1 \
        and z3.is_bv(term.arg(0))


def _read_index(term: z3.ExprRef) -> z3.BitVecRef | None:
    read = _one_read(term)
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


def _instance(access: Access, thread: Thread, launch_ok: z3.BoolRef) -> Instance:
    adds = element_index(access, 0) == L
    exact = z3.And(access.guard, *[loop.reached(k) for loop, k in access.loops])
    return Instance(access, writer_variables(access, thread), z3.And(launch_ok, access.guard, adds),
                    z3.And(launch_ok, exact, adds))


def _pairs(items: list) -> list[tuple]:
    return [(items[i], items[j]) for i in range(len(items)) for j in range(i, len(items))]
