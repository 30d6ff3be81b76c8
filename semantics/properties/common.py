"""Shared pieces of the property checks: findings, thread copies, and witness vocabularies."""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from lean_pool.checker import Checker, Obligation, Outcome
from semantics.proof import Refused, Theorem
from semantics.proof.rules import by_smt
from semantics.ptx.machine import AXES, Launch, Thread
from semantics.ptx.state import Access
from semantics.terms import constants, subterms

PROVED, VIOLATED, UNKNOWN, NOT_CHECKED = "proved", "violated", "unknown", "not_checked"
# Not asked (equivalence of a safety-only task) or without meaning (memory safety when every access is to an
# unbounded buffer). For the verdict it counts as proved; merged with `proved` it stays, since it claims less.
NOT_APPLICABLE = "not_applicable"
PROPERTIES = ("equivalence", "race_freedom", "barrier_uniformity", "memory_safety", "termination")
# Worst first: merging two states of one property keeps the earlier in this order (STYLE 7).
SEVERITY = (VIOLATED, UNKNOWN, NOT_CHECKED, NOT_APPLICABLE, PROVED)
# The states a verdict of `verified` allows for every property.
HOLDS = (PROVED, NOT_APPLICABLE)


def worst(*states: str) -> str:
    return min(states, key=SEVERITY.index)


@dataclass
class Finding:
    prop: str
    message: str
    witness: dict = field(default_factory=dict)


@dataclass
class PropertyResult:
    """A property's state, why it is not proved, its findings, and the theorems the kernel made for the
    obligations proved on the way (`prove`). The verdict holds `proved` only where theorems state the
    property's top goals (`semantics.verdict.established`)."""

    state: str = PROVED
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    theorems: list[Theorem] = field(default_factory=list)
    # goal id -> the theorem that proves the goal only in the form tactics rewrote it to (equivalence lanes
    # whose comprehensions the matcher named, or whose divisions or padding were rewritten): not yet composed
    # back to the goal by kernel rules; the verdict accepts and counts these (docs/trusted_base.md)
    rewritten: dict[int, Theorem] = field(default_factory=dict)
    # equivalence: (id of a store site, lane) -> the lane's top goal as `equivalence.goal` built it, for the
    # verdict to check (`equivalence.is_goal`) and look up among the theorems
    goals: dict[tuple[int, int], z3.BoolRef] = field(default_factory=dict)

    def downgrade(self, state: str, reason: str | None = None) -> None:
        self.state = worst(self.state, state)
        if reason and reason not in self.reasons:
            self.reasons.append(reason)

    def merge(self, other: PropertyResult) -> None:
        """Fold in another check of the same property."""
        self.state = worst(self.state, other.state)
        self.reasons += [r for r in other.reasons if r not in self.reasons]
        self.findings += other.findings
        self.theorems += other.theorems
        self.rewritten.update(other.rewritten)
        self.goals.update(other.goals)


def prove(ob: Obligation, checker: Checker, timeout_s: float, record, result: PropertyResult | None = None) -> Outcome:
    """Decide `ob` through the kernel: `by_smt` of ¬formula (the very obligation `ob`, see `rules.negation`).
    The outcome is recorded and returned as `checker.check`'s would be; when proved, the theorem
    ⊢ ¬formula joins `result.theorems`."""
    try:
        theorem = by_smt(z3.Not(ob.formula), checker, timeout_s, ob.name, ob.prop, witness=ob.witness)
    except Refused as refused:
        record(refused.obligation, refused.outcome)
        return refused.outcome
    (checked, outcome), = theorem.evidence
    record(checked, outcome)
    if result is not None:
        result.theorems.append(theorem)
    return outcome


def goal_of(ob: Obligation) -> z3.BoolRef:
    """The statement an obligation proves when it is unsat: its formula cannot hold."""
    return z3.Not(ob.formula)


def thread_witness(thread: Thread, loops: tuple = (), suffix: str = "") -> dict[str, z3.ExprRef]:
    """Terms naming a thread's coordinates (and its loop iterations) for a model to report."""
    terms: dict[str, z3.ExprRef] = {}
    for i, axis in enumerate(AXES):
        terms[f"block{suffix}.{axis}"] = thread.ctaid[i]
        terms[f"thread{suffix}.{axis}"] = thread.tid[i]
    for loop, k in loops:
        terms[f"iteration{suffix}@line{loop.line}"] = k
    return terms


def shaped_thread(values: dict, suffix: str = "") -> dict:
    """A witness's thread as the contract's JSON: {'block': [x, y, z], 'thread': [x, y, z]}, plus the
    iteration of each enclosing loop as 'iteration@line N'."""
    prefix = f"iteration{suffix}@"
    shaped = {
        "block": [values[f"block{suffix}.{a}"] for a in AXES],
        "thread": [values[f"thread{suffix}.{a}"] for a in AXES],
        **{"iteration@" + k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)},
    }
    scalars = {k[len("scalar."):]: v for k, v in values.items() if k.startswith("scalar.")}
    if scalars:   # the symbolic sizes of the launch (`verdict.WithSizes`), lifted out by `verdict.name_sizes`
        shaped["scalars"] = scalars
    return shaped


def sites(accesses: list) -> dict[int, str]:
    """A name per access (or shared read), by `id`: `line{L}@{phase}`, and `#k` for the k-th (k ≥ 1) of several
    at one line and phase (one instruction on several paths). A hint key built from it names one access site:
    an unrolled loop (a tree reduction's levels) has one PTX line per instruction but a phase per level, and
    levels sharing a key would replay one level's hint for another (`lark check`)."""
    seen: dict[tuple[int, int], int] = {}
    names = {}
    for a in accesses:
        k = seen[(a.line, a.phase)] = seen.get((a.line, a.phase), -1) + 1
        names[id(a)] = f"line{a.line}@{a.phase}" + (f"#{k}" if k else "")
    return names


def input_reads(formula: z3.ExprRef) -> dict[str, z3.ExprRef]:
    """Witness terms for every read of a global buffer's initial contents in `formula` (an application of a
    buffer's contents function, `Buffer.contents`): its index and its value, so a model can say which inputs
    a witness needs (a branch on data, say). Paired by `shaped_inputs`."""
    found: dict[str, z3.ExprRef] = {}
    for i, app in enumerate(_contents_reads(formula)):
        found[f"input{i}.index"], found[f"input{i}.value"] = app.arg(0), app
    return found


def _contents_reads(formula: z3.ExprRef) -> list[z3.ExprRef]:
    seen, out = set(), []
    for t in subterms(formula):
        if z3.is_app(t) and t.num_args() == 1 and t.decl().kind() == z3.Z3_OP_UNINTERPRETED \
                and t.decl().domain(0) == z3.BitVecSort(64) and t.get_id() not in seen:
            seen.add(t.get_id())
            out.append(t)
    return out


def shaped_inputs(formula: z3.ExprRef, model: dict) -> dict[str, object]:
    """The contract's `inputs` ({"x[12]": value}) from a model of witness terms made by `input_reads`."""
    shaped = {}
    for i, app in enumerate(_contents_reads(formula)):
        index, value = model.get(f"input{i}.index"), model.get(f"input{i}.value")
        if isinstance(index, int) and value is not None and not isinstance(value, str):
            shaped[f"{app.decl().name()}[{index}]"] = value if isinstance(value, bool | int) else float(value)
    return shaped


def mentions_opaque(term: z3.ExprRef) -> bool:
    """Whether a formula depends on a value the model does not compute (see ThreadState.opaque). A model
    of such a formula may pick an impossible value for it, so it is no witness."""
    return any(str(c).startswith("opaque!") for c in local_constants(term, set()))


def local_constants(term: z3.ExprRef, shared: set[str]) -> list[z3.ExprRef]:
    """Uninterpreted constants in `term` that belong to one thread (all but the shared ones)."""
    return [c for c in constants(term) if str(c) not in shared]


def rename_apart(terms: list[z3.ExprRef], thread: Thread, other: Thread, shared: set[str]) -> list:
    """The substitution that makes `terms` speak of `other`: its coordinates for the thread's, and a copy
    (tagged with `other.tag`) of every other thread-local symbol."""
    pairs = list(zip(thread.variables(), other.variables(), strict=True))
    renamed = {str(a) for a, _ in pairs}
    for t in terms:
        for c in local_constants(t, shared):
            if str(c) not in renamed:
                renamed.add(str(c))
                pairs.append((c, z3.Const(f"{c}{other.tag}", c.sort())))
    return pairs


def second_thread(access: Access, thread: Thread, other: Thread, shared: set[str]):
    """The access as performed by `other`: every thread-local symbol renamed apart."""
    pairs = rename_apart([access.guard, access.offset], thread, other, shared)
    guard, offset = (z3.substitute(t, *pairs) for t in (access.guard, access.offset))
    loops = tuple((loop, z3.substitute(k, *pairs)) for loop, k in access.loops)
    return guard, offset, loops


def escape(loops: tuple, fixes: list[tuple[z3.ExprRef, z3.ExprRef]]) -> z3.BoolRef:
    """With a witness's thread-local values substituted (`fixes`): some earlier iteration of an
    enclosing loop would already have left it. Unsat means the witness's iterations really happen;
    the access guards alone over-approximate loop reachability."""
    escapes = []
    for loop, k in loops:
        j = z3.FreshConst(z3.BitVecSort(64), "j")
        escapes.append(z3.And(z3.ULT(j, k), z3.Not(loop.stay_at(j))))
    return z3.substitute(z3.Or(escapes), *fixes) if escapes and fixes else z3.Or(escapes) if escapes \
        else z3.BoolVal(False)


def witness_reached(loops: tuple, witness: dict[str, z3.ExprRef], model: dict, checker, timeout_s: float,
                    prop: str) -> bool:
    """The model's loop iterations (and thread) for a witness of an access inside `loops` are really reached:
    no earlier iteration leaves the loop (`escape` unsat with the model's thread-local values fixed)."""
    if not loops:
        return True
    fixes = [(t, z3.BitVecVal(model[n], t.size())) for n, t in witness.items()
             if n != "offset" and z3.is_const(t)]
    probe = Obligation("reachability of a witness", prop, escape(loops, fixes))
    return checker.check(probe, timeout_s).status == PROVED


def in_launch(thread: Thread, launch: Launch) -> z3.BoolRef:
    return thread.in_launch(launch)


def model_of(formula: z3.BoolRef, timeout_ms: int = 5000) -> z3.ModelRef | None:
    """One model of `formula`, or None: a source of guesses (the value a hypothesis forces, say) that the
    caller then proves; never evidence by itself."""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(formula)
    return solver.model() if solver.check() == z3.sat else None
