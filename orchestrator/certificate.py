"""Writing certificates (verified tasks) and witnesses (refuted tasks) for `lark verify` (DESIGN §7).

A certificate holds what a checker needs to redo the proof and nothing it would have to trust: the task's
identity (hashes of the kernel, its PTX, the reference and its graph; launch and bindings), the axioms the
semantics applied, the prover hints the goals were derived with (loop exits and bounds, writers of elements and
of shared values), and the proof: the DAG of kernel-rule applications (`cert_proof`) from which the kernel makes
again, for every top goal of every property, a theorem that states it, and the theorems of the side conditions
the derivation of those goals rested on. Search that failed leaves no theorem, so nothing of it is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from lean_pool.checker import DEFAULT_RLIMIT, DEFAULT_SEED
from orchestrator import cert_schema
from orchestrator.cert_identity import identity
from orchestrator.cert_proof import GoalRoot, proof_to_json
from orchestrator.cert_terms import BadTerm, hints_to_json
from orchestrator.pipeline import Prepared
from semantics.axioms import AXIOM_TABLE_VERSION
from semantics.goals import accepted_forms
from semantics.problem import Report


class NoCertificate(Exception):
    """The report's proof cannot be written as a certificate; the message says why."""


# The settings every LARK solver process uses (Z3Checker() and pool workers), recorded in the certificate.
SOLVING = {"z3_seed": DEFAULT_SEED, "z3_rlimit": DEFAULT_RLIMIT, "cvc5_seed": DEFAULT_SEED}


def _common(manifest: Path, document: Path, prepared: Prepared, report: Report, kind: str) -> dict:
    if prepared.task.safety_only:
        raise NoCertificate("safety-only tasks (no [reference]) have no certificate or witness file format yet")
    shown = os.path.relpath(Path(manifest).absolute(), Path(document).absolute().parent)
    return {"schema": kind, "version": cert_schema.VERSIONS[kind], "manifest": shown,
            "task": identity(prepared.task, prepared),
            "kernel_source_text": prepared.task.kernel.source.read_text(encoding="utf-8"),
            "axioms": {"table_version": AXIOM_TABLE_VERSION, "used": sorted(report.axioms)}}


def goal_roots(report: Report) -> list[GoalRoot]:
    """For every top goal of every property, the theorem (without hypotheses) that states it; NoCertificate
    names the first goal no theorem states (one met only in the form tactics rewrote it to, for instance)."""
    roots = []
    for prop, goals in report.expected.items():
        stated = {t.conclusion.get_id(): t for t in report.theorems.get(prop, []) if not t.hypotheses}
        for what, forms in goals:
            theorem = next((stated[f.get_id()] for f in accepted_forms(forms) if f.get_id() in stated), None)
            if theorem is None:
                how = dict(report.standings.get(prop, [])).get(what, "open")
                raise NoCertificate(f"no kernel theorem states the goal of {what} ({how}): lark check could not "
                                    f"accept the proof")
            roots.append((prop, what, theorem))
    return roots


def certificate(manifest: Path, path: Path, prepared: Prepared, report: Report) -> cert_schema.Certificate:
    """The certificate of a verified report, to be written at `path` (the manifest is named relative to it)."""
    if report.verdict != "verified":
        raise NoCertificate(f"the task is {report.verdict}, not verified")
    summed = sorted({a.buffer for a in report.accesses if a.kind == "atomic" and a.space == "global"
                     and prepared.problem.buffers[a.buffer].role == "output"})
    if summed:   # `semantics.derive` in check mode: atomics are not kernel theorems yet
        raise NoCertificate(f"{summed[0]} is accumulated with atomics, which lark check cannot re-derive from "
                            f"kernel theorems yet")
    try:
        proof, hints = proof_to_json(goal_roots(report), report.facts, report.hints)
    except BadTerm as exc:
        raise NoCertificate(f"the proof cannot be written: {exc}") from None
    return cert_schema.Certificate.model_validate(
        {**_common(manifest, path, prepared, report, cert_schema.CERTIFICATE), "hints": hints,
         "properties": report.properties, "proof": proof, "solving": SOLVING})


def witness(manifest: Path, path: Path, prepared: Prepared, report: Report) -> cert_schema.Witness:
    """The witness file of a refuted report: its findings and the identity of the task they refute."""
    findings = [{"property": f.prop, "message": f.message, "witness": f.witness} for f in report.findings]
    return cert_schema.Witness.model_validate(
        {**_common(manifest, path, prepared, report, cert_schema.WITNESS), "hints": hints_to_json(report.hints),
         "findings": findings})


def write_certificate(path: Path, manifest: Path, prepared: Prepared, report: Report) -> Path:
    cert_schema.dump(certificate(manifest, path, prepared, report), path)
    return path


def write_witness(path: Path, manifest: Path, prepared: Prepared, report: Report) -> Path:
    cert_schema.dump(witness(manifest, path, prepared, report), path)
    return path
