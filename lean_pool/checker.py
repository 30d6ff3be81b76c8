"""Obligations and the `Checker` interface that decides them.

An obligation is a closed formula whose *unsatisfiability* proves a property (it states "the property
fails here"). Its canonical text is SMT-LIB 2, and its SHA-256 is the cache key and the certificate
entry. A satisfying model is only a candidate counterexample: the caller replays it on the semantics
before reporting it. Solver `unknown` and timeouts are outcomes, never facts (STYLE 7).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

import z3

from lean_pool.cancel import cancelled, stoppable
from semantics.terms import constants

PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"
DEFAULT_RLIMIT, DEFAULT_SEED = 50_000_000, 0   # z3's work limit and seed, the same in every backend process
WITNESS_PREFIX = "w!"   # names of the witness definitions in `Obligation.smt2_with_witnesses`
SIMPLE_SYMBOL = re.compile(r"[A-Za-z~!@$%^&*_\-+=<>.?/][A-Za-z0-9~!@$%^&*_\-+=<>.?/]*")


def _quote(name: str) -> str:
    """z3 prints names that are not SMT-LIB simple symbols (e.g. the second thread's `tid.x'`) unquoted and
    then cannot parse its own output; a name in |...| reads back. (A name holding | or \\ cannot be quoted;
    the solver's parse error then makes the obligation `unknown`.)"""
    if SIMPLE_SYMBOL.fullmatch(name) or "|" in name or "\\" in name:
        return name
    return f"|{name}|"


def _quoting(terms: list[z3.ExprRef]) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """Substitution pairs renaming each constant whose name needs quoting to its quoted form."""
    found = {c.get_id(): c for t in terms for c in constants(t) if _quote(str(c)) != str(c)}
    return [(c, z3.Const(_quote(str(c)), c.sort())) for c in found.values()]


# z3's default context is shared by every thread of the process and is not thread-safe: threads that build
# obligation texts concurrently (a pool serving several callers) take this lock.
Z3_LOCK = threading.RLock()
# Python frees a z3 object (a reference-count decrement in z3) in whichever thread drops its last reference —
# a search thread finishing with an obligation while the main thread builds terms. Decrements from two threads
# at once corrupt the context (CI saw the process die with SIGSEGV); in this mode z3 queues them under a lock.
z3.Z3_enable_concurrent_dec_ref(z3.main_ctx().ref())

@dataclass(frozen=True)
class Obligation:
    """`formula` must be unsat for the property to hold. `witness` names terms whose values a model
    should report (thread ids, element indices, input values)."""

    name: str
    prop: str
    formula: z3.BoolRef
    witness: dict[str, z3.ExprRef] = field(default_factory=dict)

    def smt2(self) -> str:
        with Z3_LOCK:
            solver = z3.Solver()
            solver.add(self.formula)
            return solver.to_smt2()

    def digest(self) -> str:
        return hashlib.sha256(self.smt2().encode()).hexdigest()

    def smt2_with_witnesses(self) -> str:
        """The text that crosses process boundaries (solver workers, actors): the formula plus one definition
        `w!name = term` per witness term, so that a solver elsewhere can report witness values by name, with
        names quoted so that it parses back. Equisatisfiable with `smt2()`."""
        with Z3_LOCK:
            terms = [self.formula, *(z3.Const(_quote(WITNESS_PREFIX + name), term.sort()) == term
                                     for name, term in self.witness.items())]
            pairs = _quoting(terms)
            solver = z3.Solver()
            solver.add(*(z3.substitute(t, *pairs) for t in terms) if pairs else terms)
            return solver.to_smt2()


@dataclass
class Outcome:
    status: str                                  # proved | refuted | unknown
    backend: str
    seconds: float
    model: dict[str, object] | None = None      # witness name -> int | Fraction | bool
    reason: str | None = None
    z3_model: z3.ModelRef | None = None          # for replay in-process; never serialised
    cached: bool | None = None                   # None: no lemma cache asked; True: a cache hit; False: a miss


class Checker(Protocol):
    name: str

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome: ...


def model_value(value: z3.ExprRef) -> object:
    """A Python value for a concrete z3 value (int for bit-vectors, Fraction for reals)."""
    if z3.is_bv_value(value):
        return value.as_long()
    if z3.is_rational_value(value):
        return Fraction(value.as_fraction())
    if z3.is_algebraic_value(value):
        return Fraction(value.approx(30).as_fraction())
    if z3.is_true(value) or z3.is_false(value):
        return z3.is_true(value)
    return str(value)


INTERRUPT_EVERY_S = 0.05
BLAST_S = 0.5   # the bit-blasting pass's share of a pure bit-vector query (`Z3Checker._blasted`)


def _interrupt_until(done: threading.Event, ctx: z3.Context) -> None:
    """Interrupt `ctx` now and every INTERRUPT_EVERY_S until `done` (on a thread of its own): an interrupt that
    lands before z3 has entered its check is not remembered by z3, and the query would then run to its
    timeout or work limit."""
    def repeat() -> None:
        ctx.interrupt()
        while not done.wait(INTERRUPT_EVERY_S):
            ctx.interrupt()
    threading.Thread(target=repeat, name="lark-z3-interrupt", daemon=True).start()


class Z3Checker:
    """Z3 in-process with a fresh context and solver per obligation, a fixed seed and a work limit (STYLE 9).

    The obligation is translated out of z3's shared main context (under `Z3_LOCK`) into a context of its own,
    so its answer and model depend on the obligation alone, not on what the process built or solved before;
    and the solver runs outside the lock, so several threads can solve at once. A model is translated back
    into the main context, where replay evaluates the obligation's own terms. A cancellation token current
    in the caller's context (`lean_pool.cancel`) interrupts the running query."""

    name = "z3"

    def __init__(self, rlimit: int = DEFAULT_RLIMIT, seed: int = DEFAULT_SEED):
        self.rlimit = rlimit
        self.seed = seed

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        start = time.monotonic()
        ctx = z3.Context()
        with Z3_LOCK:
            formula = obligation.formula.translate(ctx)
            witness = {k: t.translate(ctx) for k, t in obligation.witness.items()}
        if self._blasted(ctx, formula, timeout_s):
            return Outcome(PROVED, self.name, time.monotonic() - start)
        solver = z3.Solver(ctx=ctx)
        solver.set("timeout", max(int((timeout_s - (time.monotonic() - start)) * 1000), 1))
        solver.set("rlimit", self.rlimit)
        solver.set("random_seed", self.seed)
        solver.add(formula)
        result = self._run(ctx, solver)
        seconds = time.monotonic() - start
        if result == z3.unsat:
            return Outcome(PROVED, self.name, seconds)
        if result == z3.sat:
            m = solver.model()
            values = {k: model_value(m.eval(t, model_completion=True)) for k, t in witness.items()}
            with Z3_LOCK:
                main = m.translate(z3.main_ctx())
            return Outcome(REFUTED, self.name, seconds, values, z3_model=main)
        reason = "cancelled" if cancelled() else f"z3: {solver.reason_unknown()}"
        return Outcome(UNKNOWN, self.name, seconds, reason=reason)

    @staticmethod
    def _run(ctx: z3.Context, solver: z3.Solver) -> z3.CheckSatResult:
        """The solver's answer, interruptible by the caller's cancellation token."""
        done = threading.Event()
        try:
            with stoppable(lambda: _interrupt_until(done, ctx)):
                return solver.check()
        finally:
            done.set()

    def _blasted(self, ctx: z3.Context, formula: z3.BoolRef, timeout_s: float) -> bool:
        """Whether a pure bit-vector formula is unsat by simplification and bit-blasting alone, asked for at
        most BLAST_S. z3's default strategy first solves equations for variables: a mixed-radix digit's
        definition `256·ctaid + tid = c0 + 511·c1 + 261121·c2` then puts c0 back as that sum inside a query about
        c0 and c1 only (a 2-D pooling tap test, unknown after 30 s; unsat here in 0.03 s). Only `unsat` is
        taken from this pass (any strategy's unsat is unsat); a model or no answer leaves the query to the
        default solver, so witnesses and their replay are unchanged."""
        goal = z3.Goal(ctx=ctx)
        goal.add(formula)
        if z3.Probe("is-qfbv", ctx)(goal) != 1.0:
            return False
        solver = z3.Then("simplify", "propagate-values", "bit-blast", "sat", ctx=ctx).solver()
        solver.set("timeout", max(int(min(timeout_s, BLAST_S) * 1000), 1))
        solver.set("rlimit", self.rlimit)   # (a certificate's recorded work limit binds this pass too)
        solver.add(formula)
        return self._run(ctx, solver) == z3.unsat
