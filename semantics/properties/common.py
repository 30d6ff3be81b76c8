"""Shared pieces of the property checks: findings, thread copies, and witness vocabularies."""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from lean_pool.checker import Obligation
from semantics.ptx.machine import AXES, Launch, Thread
from semantics.ptx.state import Access
from semantics.terms import constants

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
    """A property's state, why it is not proved, and its findings."""

    state: str = PROVED
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def downgrade(self, state: str, reason: str | None = None) -> None:
        self.state = worst(self.state, state)
        if reason and reason not in self.reasons:
            self.reasons.append(reason)

    def merge(self, other: PropertyResult) -> None:
        """Fold in another check of the same property."""
        self.state = worst(self.state, other.state)
        self.reasons += [r for r in other.reasons if r not in self.reasons]
        self.findings += other.findings


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
