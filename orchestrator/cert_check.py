"""`lark check`: re-check a certificate, or replay a witness, independently of the run that wrote it.

Trusted code, so kept short. A certificate is trusted for nothing but its hints (DESIGN §7):
1. it reads as a certificate of this format version, and each certified obligation's text still hashes
   to its SHA-256;
2. it was made with the current axiom table, and the task it names is the same task: kernel source, PTX,
   reference and graph hashes, launch, bindings (`cert_identity.rederive` compiles and captures again);
3. the semantics, given only the certificate's hints (replay provers: a key with no hint proposes
   nothing), verifies the task again, with the same axioms and every hint accepted;
4. the obligations it proved are exactly the certified ones: compared by SHA-256, and where texts differ,
   by the structure of the formulas they parse to (z3's printer chooses its `let` bindings by the state of
   the process, and its simplifier orders commutative arguments by the order terms were made, so one
   formula can print several ways; `lean_pool.canonical.structural_digest` names the parsed structure);
5. each of them re-proves (unsat) from its SMT-LIB text in a fresh z3 and/or cvc5.
Each stage reports all its problems and stops there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import z3

from lean_pool.canonical import structural_digest
from lean_pool.checker import PROVED, Obligation, Outcome, Z3Checker
from lean_pool.cvc5_checker import Cvc5Checker, standard_smt2, unshadow
from orchestrator import cert_schema
from orchestrator.cert_identity import Rejected, TaskMissing, rederive, sha256
from orchestrator.cert_schema import SOLVERS
from orchestrator.cert_terms import BadHint, hint_from_json, obligation_text, replay_provers
from orchestrator.cert_witness import replay_witness
from semantics.verdict import Report, verify

REPROVE_TIMEOUT_S = 120.0
ACCEPTED, REJECTED, UNREADABLE = 0, 1, 3


def prove_text(text: str, solver: str, timeout_s: float = REPROVE_TIMEOUT_S,
               solving: cert_schema.Solving | None = None) -> Outcome:
    """Decide an obligation from its SMT-LIB text alone, in a fresh solver of the named kind, with the seed
    and work limit the certificate records (`solving`; the defaults of `lean_pool.checker` without it)."""
    if solver == "cvc5":
        return (Cvc5Checker(solving.cvc5_seed) if solving else Cvc5Checker()).check_text(text, timeout_s)
    z3_checker = Z3Checker(solving.z3_rlimit, solving.z3_seed) if solving else Z3Checker()
    return z3_checker.check(Obligation("re-proof", "", parsed(text)), timeout_s)


def parsed(text: str) -> z3.BoolRef:
    """The formula an obligation's SMT-LIB text states, read by z3 with the semantics' ideal functions kept
    uninterpreted (`unshadow`), as the run that proved it had them."""
    return z3.And(*z3.parse_smt2_string(unshadow(standard_smt2(text))))


def one_line(name: str) -> str:
    """An obligation name as one line (names embed z3's multi-line printing of hint terms)."""
    return " ".join(name.split())


def _own_hashes(cert: cert_schema.Certificate) -> None:
    """Stage 1 (the format version was checked on loading): each certified text hashes to its SHA-256."""
    problems = [f"obligation '{one_line(o.name)}': its smt2 text no longer hashes to its sha256 {o.sha256}"
                for o in cert.obligations if sha256(o.smt2) != o.sha256]
    if problems:
        raise Rejected(problems)


def _same_proof(cert: cert_schema.Certificate, report: Report) -> dict[str, Obligation]:
    """Stages 3 and 4: the re-derived proof is the certified one. Returns its obligations by SHA-256."""
    if report.verdict != "verified":
        lost = [f"hint {key} is no longer accepted" for key in cert.hints if key not in report.hints]
        why = report.reason or "; ".join(f.message for f in report.findings)
        raise Rejected([*lost, f"with the certificate's hints the task is {report.verdict}, not verified: {why}"])
    problems = []
    if sorted(report.axioms) != cert.axioms.used:
        problems.append(f"the axioms used no longer match: certified {cert.axioms.used}, re-derived "
                        f"{sorted(report.axioms)}")
    problems += [f"hint {key} is not used by the proof" for key in cert.hints if key not in report.hints]
    derived = {obligation_text(ob)[1]: ob for ob, outcome in report.obligations if outcome.status == PROVED}
    certified = {o.sha256: o for o in cert.obligations}
    _pair_by_structure(derived, certified)
    problems += [f"certified obligation '{one_line(o.name)}' (sha256 {digest}) is not derived from the kernel "
                 f"and reference" for digest, o in certified.items() if digest not in derived]
    problems += [f"obligation '{one_line(ob.name)}' (sha256 {digest}) is derived but missing from the certificate"
                 for digest, ob in derived.items() if digest not in certified]
    if problems:
        raise Rejected(problems)
    return derived


def structure(text: str) -> str:
    """The structural digest (commutative arguments in any order) of the formula an SMT-LIB text parses to."""
    return structural_digest(parsed(text))


def _pair_by_structure(derived: dict[str, Obligation], certified: dict[str, object]) -> None:
    """Re-key each derived obligation whose text matches no certified one under the certified digest of the
    same parsed structure, if there is one (so stage 4 compares formulas, not their printing)."""
    unmatched = [digest for digest in certified if digest not in derived]
    extra = [digest for digest in derived if digest not in certified]
    if not unmatched or not extra:
        return
    by_structure = {structure(certified[digest].smt2): digest for digest in unmatched}
    for digest in extra:
        twin = by_structure.pop(structure(obligation_text(derived[digest])[0]), None)
        if twin is not None:
            derived[twin] = derived.pop(digest)


def check_certificate(cert: cert_schema.Certificate, path: Path, solvers: Sequence[str]) -> str:
    """A one-line summary when the certificate holds; raises Rejected saying what no longer matches."""
    _own_hashes(cert)
    prepared = rederive(cert, path)

    def hint(key: str) -> object | None:
        return hint_from_json(key, cert.hints[key]) if key in cert.hints else None

    try:
        report = verify(prepared.problem, Z3Checker(), replay_provers(hint))
    except BadHint as exc:
        raise Rejected([str(exc)]) from None
    except z3.Z3Exception as exc:
        raise Rejected([f"the certificate's hints do not fit the kernel: {exc}"]) from None
    derived = _same_proof(cert, report)
    failures = []
    for ob in derived.values():
        text, _ = obligation_text(ob)
        for solver in solvers:
            outcome = prove_text(text, solver, solving=cert.solving)
            if outcome.status != PROVED:
                failures.append(f"obligation '{one_line(ob.name)}' does not re-prove with {solver}: {outcome.status}"
                                + (f" ({outcome.reason})" if outcome.reason else ""))
    if failures:
        raise Rejected(failures)
    return (f"certificate holds: {prepared.task.name}, {len(derived)} obligations re-derived and re-proved with "
            f"{' and '.join(solvers)}")


def run_check(path: Path, solver: str) -> tuple[int, str]:
    """Exit status and text for `lark check PATH`: 0 holds, 1 rejected, 3 not a readable document or its
    task not found (cannot check)."""
    try:
        document = cert_schema.load(path)
    except cert_schema.BadDocument as exc:
        return UNREADABLE, f"error: {exc}"
    try:
        if isinstance(document, cert_schema.Certificate):
            return ACCEPTED, check_certificate(document, path, SOLVERS[solver])
        return ACCEPTED, replay_witness(document, path)
    except TaskMissing as exc:
        return UNREADABLE, f"error: cannot check {path}: {exc}"
    except Rejected as exc:
        kind = "certificate" if isinstance(document, cert_schema.Certificate) else "witness"
        return REJECTED, "\n".join([f"{path}: {kind} rejected", *(f"  {p}" for p in exc.problems)])
