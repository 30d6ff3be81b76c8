"""In-process models for refutations that arrived from another process (a worker, an actor, the cache).

The property checkers replay a refutation on an in-process z3 model (`Outcome.z3_model`, DESIGN §6: a
counterexample is reported only when it replays). Across a process boundary only witness values travel,
so for such an outcome this wrapper solves the obligation again in-process, pinned to the reported witness
values: the model it hands on agrees with the witness the caller reads from `Outcome.model`. When the
pinned query is not sat in-process the foreign refutation is not trusted, and the outcome is `unknown`.
"""

from __future__ import annotations

from fractions import Fraction

import z3

from lean_pool.checker import REFUTED, UNKNOWN, Checker, Obligation, Outcome, Z3Checker


def _pins(obligation: Obligation, values: dict[str, object]) -> list[z3.BoolRef]:
    pins = []
    for name, term in obligation.witness.items():
        value = values.get(name)
        if isinstance(value, bool) and z3.is_bool(term):
            pins.append(term == z3.BoolVal(value))
        elif isinstance(value, int) and z3.is_bv(term):
            pins.append(term == z3.BitVecVal(value, term.size()))
        elif isinstance(value, int) and z3.is_int(term):
            pins.append(term == z3.IntVal(value))
        elif isinstance(value, int | Fraction) and z3.is_real(term):
            pins.append(term == z3.RealVal(str(Fraction(value))))
    return pins


class LocalModels:
    def __init__(self, inner: Checker, local: Checker | None = None):
        self.inner = inner
        self.local = local or Z3Checker()
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        outcome = self.inner.check(obligation, timeout_s)
        if outcome.status != REFUTED or outcome.z3_model is not None:
            return outcome
        pinned = Obligation(obligation.name, obligation.prop,
                            z3.And(obligation.formula, *_pins(obligation, outcome.model or {})), obligation.witness)
        again = self.local.check(pinned, timeout_s)
        seconds = outcome.seconds + again.seconds
        if again.status == REFUTED:
            return Outcome(REFUTED, outcome.backend, seconds, again.model, z3_model=again.z3_model,
                           cached=outcome.cached)
        return Outcome(UNKNOWN, outcome.backend, seconds, cached=outcome.cached,
                       reason=f"a counterexample from {outcome.backend} did not reproduce in-process "
                              f"({again.status}: {again.reason})")
