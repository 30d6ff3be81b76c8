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

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.comprehension import SUM
from semantics.properties.common import UNKNOWN, PropertyResult, mentions_opaque, rename_apart
from semantics.properties.coverage import writer_variables
from semantics.properties.equivalence import element_index
from semantics.properties.reductions import open_family
from semantics.ptx.machine import Buffer, Launch, Thread
from semantics.ptx.state import Access

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
    scale, total = scaled
    ref = open_family(total, "m!", split=False)
    h, m = ref.lanes[0], ref.var
    in_range = z3.And(z3.ULE(ref.lo, m), z3.ULT(m, ref.hi))
    instances = [_instance(a, thread, launch_ok) for a in accesses]
    result = PropertyResult()

    def proved(name: str, formula: z3.BoolRef) -> bool:
        ob = Obligation(f"equivalence: {buffer.name} accumulated by atomics: {name}", "equivalence",
                        z3.And(z3.ULT(L, buffer.numel), formula))
        outcome = checker.check(ob, timeout_s)
        record(ob, outcome)
        return outcome.status == PROVED

    phis = []
    for inst in instances:
        key = f"atomics:{buffer.name}:line{inst.access.line}"
        phi = provers.reindex(f"{key}:phi", inst.value, None, h, m)
        if phi is None:
            return PropertyResult(UNKNOWN, [f"no reference index could be proposed for the value added at line "
                                            f"{inst.access.line}"])
        at_phi = z3.substitute(h, (m, phi))
        into = z3.And(inst.adds_into_l, z3.Not(z3.And(z3.substitute(in_range, (m, phi)),
                                                      inst.value == scale * at_phi)))
        if not proved(f"the value added at line {inst.access.line} is the reference's term", into):
            result.downgrade(UNKNOWN, f"could not prove that each value atomically added to {buffer.name} at line "
                                      f"{inst.access.line} is a term of the reference's sum")
            return result
        accepted[f"{key}:phi"] = phi
        phis.append(phi)
    for (a, phi_a), (b, phi_b) in _pairs(list(zip(instances, phis, strict=True))):
        pairs = rename_apart([b.adds_into_l, phi_b, *b.variables], thread, OTHER, shared | {str(L)})
        b_adds, b_phi = z3.substitute(b.adds_into_l, *pairs), z3.substitute(phi_b, *pairs)
        same = a is b and z3.And([v == z3.substitute(v, *pairs) for v in a.variables])
        clash = z3.And(a.adds_into_l, b_adds, phi_a == b_phi, z3.Not(same) if a is b else z3.BoolVal(True))
        if not proved(f"no term is added twice (lines {a.access.line}, {b.access.line})", clash):
            result.downgrade(UNKNOWN, f"could not prove that no term of the reference is added to {buffer.name} "
                                      f"twice (lines {a.access.line} and {b.access.line})")
            return result
    hits = []
    for inst, phi in zip(instances, phis, strict=True):
        key = f"atomics:{buffer.name}:line{inst.access.line}:psi"
        # the writer of term m of element L solves two equations, element(τ) = L and φ(τ) = m: asked of the
        # inverse prover as one mixed-radix index (only a question; the obligation below checks the answer)
        index = element_index(inst.access, 0)
        psi = provers.inverse(key, index * RADIX + z3.substitute(phi, (L, index)), inst.variables, L * RADIX + m)
        if psi is None:
            continue
        subst = [(v, psi[str(v)]) for v in inst.variables]
        hits.append(z3.substitute(z3.And(inst.happens, phi == m), *subst))
        accepted[key] = psi
    if not hits or not proved("every term of the reference is added", z3.And(in_range, z3.Not(z3.Or(hits)))):
        result.downgrade(UNKNOWN, f"could not prove that every term of the reference's sum is added to {buffer.name}")
    return result


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
    term = z3.simplify(term)
    if z3.is_app(term) and term.decl() == SUM:
        return z3.RealVal(1), term
    if z3.is_mul(term) and term.num_args() == 2:
        for c, s in (term.children(), reversed(term.children())):
            if z3.is_rational_value(c) and z3.is_app(s) and s.decl() == SUM:
                return c, s
    return None


def _instance(access: Access, thread: Thread, launch_ok: z3.BoolRef) -> Instance:
    adds = element_index(access, 0) == L
    exact = z3.And(access.guard, *[loop.reached(k) for loop, k in access.loops])
    return Instance(access, writer_variables(access, thread), z3.And(launch_ok, access.guard, adds),
                    z3.And(launch_ok, exact, adds))


def _pairs(items: list) -> list[tuple]:
    return [(items[i], items[j]) for i in range(len(items)) for j in range(i, len(items))]
