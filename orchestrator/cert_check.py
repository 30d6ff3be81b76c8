"""`lark check` of a certificate: replay its proof through the kernel and meet the task's goals, with no search.

A certificate is trusted for nothing (DESIGN §7). The check stops at the first stage that fails and reports every
problem of that stage:
1. it reads as a certificate of this format version (`cert_schema.load`);
2. it was made with the current axiom table, and the task it names is the same task: kernel source, PTX,
   reference and graph hashes, launch, bindings (`cert_identity.rederive` compiles and captures again);
3. every node of its proof replays: the kernel applies the node's rule to its inputs again, and the side
   conditions of each rule (`by_smt` and the rules that ask a solver) are re-proved by z3 and/or cvc5 with the
   recorded seed and work limit (`replay_proof`);
4. the trusted semantics derives the task's meaning and its top goals again (`semantics.derive`, with the
   certificate's hints and no tactic): every side condition that derivation asks must be stated by a replayed
   theorem, and so must every top goal of every property, exactly and without hypotheses, with the axioms the
   certificate lists.
This module imports no tactic and runs no search (tests/test_certificate.py runs it in a fresh process and lists
what it imported; an import contract in pyproject.toml says the same).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import z3

from lean_pool.checker import PROVED, UNKNOWN, Checker, Obligation, Outcome, Z3Checker
from lean_pool.cvc5_checker import Cvc5Checker
from orchestrator import cert_schema
from orchestrator.cert_identity import Rejected, TaskMissing, rederive
from orchestrator.cert_proof import BadProof, hints_from_table, proof_terms, replay_proof
from orchestrator.cert_schema import SOLVERS
from orchestrator.cert_terms import BadHint, replay_provers
from semantics import preconditions
from semantics.checkers import FiniteOnly, Known
from semantics.derive import decide
from semantics.problem import Problem

REPROVE_TIMEOUT_S = 120.0
ACCEPTED, REJECTED, UNREADABLE = 0, 1, 3


class Every:
    """`proved` only when every one of the checkers proves the obligation (`--solver both`); otherwise the first
    answer that is not, named by its backend."""

    def __init__(self, checkers: list[Checker]):
        self.checkers = checkers
        self.name = "+".join(c.name for c in checkers)

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        outcome = Outcome(UNKNOWN, self.name, 0.0, reason="no checker")
        for checker in self.checkers:
            outcome = checker.check(obligation, timeout_s)
            if outcome.status != PROVED:
                reason = f"{checker.name}: {outcome.status}" + (f" ({outcome.reason})" if outcome.reason else "")
                return Outcome(outcome.status, checker.name, outcome.seconds, reason=reason)
        return outcome


def solvers(names: Sequence[str], solving: cert_schema.Solving) -> Checker:
    """The checker that re-proves side conditions: fresh z3 and/or cvc5 with the recorded seed and work limit."""
    make = {"z3": lambda: Z3Checker(solving.z3_rlimit, solving.z3_seed), "cvc5": lambda: Cvc5Checker(solving.cvc5_seed)}
    return FiniteOnly(Every([make[name]() for name in names]))


def _replayed(cert: cert_schema.Certificate, problem: Problem, checker: Checker) -> tuple[Known, dict]:
    """Stage 3: the theorems of the proof's nodes, made again by the kernel, under the task's preconditions (the
    instances `by_smt` adds for ranged inputs), and the hints read from the same term table."""
    ranges = {b.contents().name(): b.values for b in problem.buffers.values() if b.values}
    try:
        terms = proof_terms(cert.proof)
        hints = hints_from_table(cert.hints, terms)
        with preconditions.stated(ranges):
            return Known(replay_proof(cert.proof, terms, checker, REPROVE_TIMEOUT_S)), hints
    except BadProof as exc:
        raise Rejected([f"the proof does not replay: {exc}"]) from None


def _goals_met(cert: cert_schema.Certificate, problem: Problem, known: Known, hints: dict) -> int:
    """Stage 4: the semantics' own goals, each stated by a replayed theorem. Returns how many there were."""
    try:
        decision = decide(problem, None, replay_provers(hints.get), None, known, REPROVE_TIMEOUT_S, hints=hints)
    except BadHint as exc:
        raise Rejected([str(exc)]) from None
    except z3.Z3Exception as exc:
        raise Rejected([f"the certificate's hints do not fit the kernel: {exc}"]) from None
    problems = [f"{prop}: {'; '.join(r.reasons) or r.state}" for prop, r in decision.results.items()
                if r.state != cert.properties.get(prop)]
    problems += [f"property {prop}: certified {state}, derived {decision.results[prop].state}"
                 for prop, state in cert.properties.items() if prop not in decision.results]
    if sorted(decision.axioms) != cert.axioms.used:
        problems.append(f"the axioms used no longer match: certified {cert.axioms.used}, re-derived "
                        f"{sorted(decision.axioms)}")
    if problems:
        raise Rejected(problems)
    return sum(len(goals) for goals in decision.expected.values())


def check_certificate(cert: cert_schema.Certificate, path: Path, names: Sequence[str]) -> str:
    """A one-line summary when the certificate holds; raises Rejected saying what no longer matches."""
    prepared = rederive(cert, path)
    known, hints = _replayed(cert, prepared.problem, solvers(names, cert.solving))
    goals = _goals_met(cert, prepared.problem, known, hints)
    return (f"certificate holds: {prepared.task.name}, {len(cert.proof.nodes)} proof nodes replayed through the "
            f"kernel with {' and '.join(names)}, {goals} goals and {len(cert.proof.facts)} side conditions stated "
            f"by their theorems")


def check_document(document: cert_schema.Certificate, path: Path, solver: str) -> tuple[int, str]:
    """Exit status and text for `lark check` of a certificate: 0 holds, 1 rejected, 3 its task not found."""
    try:
        return ACCEPTED, check_certificate(document, path, SOLVERS[solver])
    except TaskMissing as exc:
        return UNREADABLE, f"error: cannot check {path}: {exc}"
    except Rejected as exc:
        return REJECTED, "\n".join([f"{path}: certificate rejected", *(f"  {p}" for p in exc.problems)])
