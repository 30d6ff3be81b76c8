"""In-process models for refutations that arrived from another process (a worker, an actor, the cache).

The property checkers replay a refutation on an in-process z3 model (`Outcome.z3_model`, DESIGN §6: a
counterexample is reported only when it replays). Across a process boundary only the witness values
travel, so for such an outcome this wrapper repeats the worker's computation in-process — the same text,
seed and work limit in a fresh context (`lean_pool.fresh`), hence the same model — and translates the model
into the main context, where its declarations are the obligation's own (z3 identifies them by name and
sort). Witness values are read from that model, so model and witness always agree. If the repeat is not
sat, the foreign refutation is not trusted: the outcome is `unknown`.
"""

from __future__ import annotations

import time

import z3

from lean_pool.checker import (
    DEFAULT_RLIMIT,
    DEFAULT_SEED,
    REFUTED,
    UNKNOWN,
    Z3_LOCK,
    Checker,
    Obligation,
    Outcome,
    Z3Checker,
    model_value,
)
from lean_pool.fresh import fresh_solver


def _repeat(text: str, timeout_s: float) -> z3.ModelRef | str:
    """A model of `text` in the main context, found as a worker finds it; or why there is none."""
    try:
        solver = fresh_solver(text, timeout_s, DEFAULT_SEED, DEFAULT_RLIMIT)
        result = solver.check()
    except z3.Z3Exception as exc:
        return f"z3: {exc}"
    if result != z3.sat:
        return f"unknown: {solver.reason_unknown()}" if result == z3.unknown else str(result)
    model = solver.model()
    with Z3_LOCK:
        return model.translate(z3.main_ctx())


class LocalModels:
    def __init__(self, inner: Checker):
        self.inner = inner
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        outcome = self.inner.check(obligation, timeout_s)
        if outcome.status != REFUTED or outcome.z3_model is not None:
            return outcome
        start = time.monotonic()
        model = _repeat(obligation.smt2_with_witnesses(), timeout_s)
        if isinstance(model, str):
            # Parsed back from text, z3 may pick a different strategy (nonlinear real arithmetic with
            # uninterpreted functions is where it shows); the in-process formula is the same obligation.
            direct = Z3Checker().check(obligation, timeout_s)
            if direct.status == REFUTED and direct.z3_model is not None:
                model = direct.z3_model
        seconds = outcome.seconds + time.monotonic() - start
        if isinstance(model, str):
            return Outcome(UNKNOWN, outcome.backend, seconds, cached=outcome.cached,
                           reason=f"a counterexample from {outcome.backend} did not reproduce in-process ({model})")
        with Z3_LOCK:
            values = {name: model_value(model.eval(term, model_completion=True))
                      for name, term in obligation.witness.items()}
        return Outcome(REFUTED, outcome.backend, seconds, values, z3_model=model, cached=outcome.cached)
