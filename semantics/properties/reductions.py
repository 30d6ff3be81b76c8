"""The trusted matcher of comprehensions: when a kernel's Sum/Max equals the reference's.

Both sides of an equivalence obligation may contain comprehensions (`semantics.comprehension`). The
solver treats them as uninterpreted, so before the final obligation the matcher proves pairs of them equal
and replaces each proved pair by one fresh symbol. The theorems it relies on, over the reals:

* Sum. The kernel's body may be a sum of c lanes, Σ_{j∈[lo,hi)} (t_1(j) + … + t_c(j)). If φ maps each
  (lane i, j) into the reference's range [lo', hi') injectively, with t_i(j) = h(φ_i(j)), and
  c·(hi - lo) = hi' - lo', then φ is a bijection onto [lo', hi') and the two sums are equal (finite sums
  commute and associate).
* Max/Min. max over a set depends only on the set: if every kernel element (each lane at each j, and the
  initial value) equals some reference element, and every reference element equals some kernel element,
  the two maxima are equal. Reindexings φ (kernel -> reference) and ψ (reference -> kernel) are hints.

Every premise is an obligation (unsat proves it) under the hypothesis that the store happens; the hints
(φ, ψ) come from an untrusted prover.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.comprehension import MAX_FROM, SUM, is_comprehension


@dataclass(frozen=True)
class Family:
    """A comprehension opened up: lanes t_i over j ∈ [lo, hi), plus (max/min) an initial element."""

    kind: str
    lo: z3.BitVecRef
    hi: z3.BitVecRef
    var: z3.BitVecRef
    lanes: tuple[z3.ArithRef, ...]
    init: z3.ArithRef | None


def _terms(body: z3.ArithRef) -> list[z3.ArithRef]:
    """The summands of a body (zeros dropped: they add nothing to a sum)."""
    if z3.is_add(body):
        return [t for child in body.children() for t in _terms(child)]
    if z3.is_rational_value(body) and body.as_fraction() == 0:
        return []
    return [body]


def open_family(term: z3.ExprRef, var_name: str, split: bool) -> Family:
    """The comprehension `term` with its bound variable instantiated as a fresh 64-bit constant."""
    decl = term.decl()
    kind = "sum" if decl == SUM else "max" if decl == MAX_FROM else "min"
    args = term.children()
    init, lo, hi, lam = (None, *args) if kind == "sum" else args
    var = z3.BitVec(var_name, 64)
    body = z3.substitute_vars(lam.body(), var)
    lanes = tuple(_terms(body)) if split and kind == "sum" else (body,)
    return Family(kind, lo, hi, var, lanes, init)


def innermost(term: z3.ExprRef) -> list[z3.ExprRef]:
    """Comprehensions in `term` whose bodies contain none."""
    found, todo, seen = [], [term], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if is_comprehension(t) and not any(is_comprehension(s) for s in _subterms(t.children()[-1])):
            found.append(t)
        todo.extend(t.children())
        if z3.is_quantifier(t):
            todo.append(t.body())
    return found


def _subterms(term: z3.ExprRef) -> list[z3.ExprRef]:
    out, todo = [], [term.body() if z3.is_quantifier(term) else term]
    while todo:
        t = todo.pop()
        out.append(t)
        todo.extend(t.body() if z3.is_quantifier(c) else c for c in t.children())
    return out


def _in(family: Family, j: z3.BitVecRef) -> z3.BoolRef:
    return z3.And(z3.ULE(family.lo, j), z3.ULT(j, family.hi))


def _size128(family: Family) -> z3.BitVecRef:
    return z3.ZeroExt(64, family.hi) - z3.ZeroExt(64, family.lo)


class Matcher:
    """Proves comprehension pairs equal under a hypothesis, recording every obligation."""

    def __init__(self, hypothesis: z3.BoolRef, reindex: Callable, checker: Checker, timeout_s: float, record,
                 accepted: dict, key: str):
        self.hyp = hypothesis
        self.reindex = reindex
        self.checker = checker
        self.timeout_s = timeout_s
        self.record = record
        self.accepted = accepted
        self.key = key
        self.count = 0

    def _proved(self, name: str, formula: z3.BoolRef) -> bool:
        ob = Obligation(f"equivalence: {name}", "equivalence", z3.And(self.hyp, formula))
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED

    def rewrite(self, kernel: z3.ExprRef, reference: z3.ExprRef) -> tuple[z3.ExprRef, z3.ExprRef]:
        """Replace proved-equal comprehension pairs by shared symbols, innermost first."""
        progress = True
        while progress:
            progress = False
            for ck in innermost(kernel):
                for cr in innermost(reference):
                    if ck.decl() != cr.decl():
                        continue
                    if self._equal(ck, cr):
                        symbol = z3.Real(f"reduction!{self.key}.{self.count}")
                        self.count += 1
                        kernel = z3.substitute(kernel, (ck, symbol))
                        reference = z3.substitute(reference, (cr, symbol))
                        progress = True
                        break
                if progress:
                    break
        return kernel, reference

    def _equal(self, ck: z3.ExprRef, cr: z3.ExprRef) -> bool:
        ref = open_family(cr, "m!", split=False)
        for split in (True, False):
            ker = open_family(ck, "j!", split)
            key = f"{self.key}:reduction{self.count}:{'lanes' if split else 'whole'}"
            phis = [self.reindex(f"{key}:phi{i}", lane, ker.var, ref.lanes[0], ref.var) for i, lane in
                    enumerate(ker.lanes)]
            if None in phis:
                continue
            ok = self._sum_equal(ker, ref, phis) if ker.kind == "sum" else self._extremum_equal(ker, ref, phis, key)
            if ok:
                self.accepted.update({f"{key}:phi{i}": phi for i, phi in enumerate(phis)})
                return True
        return False

    def _maps_into(self, ker: Family, ref: Family, phis: list) -> bool:
        """Every lane at every j lands in the reference's range on an equal element."""
        h = ref.lanes[0]
        for i, (lane, phi) in enumerate(zip(ker.lanes, phis, strict=True)):
            image = z3.substitute(h, (ref.var, phi))
            if not self._proved(f"lane {i} of a kernel reduction equals the reference's element",
                                z3.And(_in(ker, ker.var), lane != image)):
                return False
            if not self._proved(f"lane {i} of a kernel reduction stays in the reference's range",
                                z3.And(_in(ker, ker.var), z3.Not(_in(ref, phi)))):
                return False
        return True

    def _sum_equal(self, ker: Family, ref: Family, phis: list) -> bool:
        if not self._maps_into(ker, ref, phis):
            return False
        j2 = z3.BitVec("j2!", 64)
        clashes = []
        for a, phi_a in enumerate(phis):
            for b, phi_b in enumerate(phis):
                other = z3.substitute(phi_b, (ker.var, j2))
                distinct = z3.BoolVal(True) if a != b else ker.var != j2
                clashes.append(z3.And(_in(ker, ker.var), _in(ker, j2), distinct, phi_a == other))
        if not self._proved("a kernel reduction's reindexing is injective", z3.Or(clashes)):
            return False
        lanes = z3.BitVecVal(len(ker.lanes), 128)
        same_size = z3.And(z3.ULE(ker.lo, ker.hi), z3.ULE(ref.lo, ref.hi), lanes * _size128(ker) == _size128(ref))
        return self._proved("a kernel reduction has as many terms as the reference's", z3.Not(same_size))

    def _extremum_equal(self, ker: Family, ref: Family, phis: list, key: str) -> bool:
        if not self._maps_into(ker, ref, phis):
            return False
        h = ref.lanes[0]
        ref_elements = [ref.init] if ref.init is not None else []
        # the kernel's initial value is some reference element (the reference's own initial value, or h(m))
        if ker.init is not None:
            m0 = self.reindex(f"{key}:init", ker.init, None, h, ref.var)
            choices = [ker.init == e for e in ref_elements]
            if m0 is not None:
                choices.append(z3.And(_in(ref, m0), ker.init == z3.substitute(h, (ref.var, m0))))
            if not self._proved("a kernel reduction's initial value is a reference element", z3.Not(z3.Or(choices))):
                return False
        # every reference element is some kernel element
        kernel_elements = [ker.init] if ker.init is not None else []
        psis = [self.reindex(f"{key}:psi{i}", h, ref.var, lane, ker.var) for i, lane in enumerate(ker.lanes)]
        covered = [z3.And(_in(ker, psi), z3.substitute(lane, (ker.var, psi)) == h)
                   for lane, psi in zip(ker.lanes, psis, strict=True) if psi is not None]
        covered += [h == e for e in kernel_elements]
        if not self._proved("every element of the reference's reduction is a kernel element",
                            z3.And(_in(ref, ref.var), z3.Not(z3.Or(covered) if covered else z3.BoolVal(False)))):
            return False
        if ref.init is None:
            return True
        j0 = self.reindex(f"{key}:refinit", ref.init, None, ker.lanes[0], ker.var)
        choices = [ref.init == e for e in kernel_elements]
        if j0 is not None:
            choices.append(z3.And(_in(ker, j0), ref.init == z3.substitute(ker.lanes[0], (ker.var, j0))))
        return self._proved("the reference's initial value is a kernel element", z3.Not(z3.Or(choices)))
