"""Writing certificates (verified tasks) and witnesses (refuted tasks) for `lark verify` (DESIGN §7).

A certificate holds what a checker needs to redo the proof and nothing it would have to trust: the task's
identity (hashes of the kernel, its PTX, the reference and its graph; launch and bindings), the axioms the
semantics applied, the prover hints that were accepted, and every obligation the proof rests on (canonical
SMT-LIB text, SHA-256, and the backend that proved it). The segmentation of the proof is the one the
semantics derives itself (per property, per access site; per loop and per output buffer through the hints),
so the hints are its only free choices; obligation names say which site each obligation covers.

The search that found the proof also tried things that failed (a rejected bound candidate, or one whose
first obligation held and second did not), and those are not part of the proof. So the proof written is
the one `lark check` will derive: the task verified again with only the accepted hints replayed.

An obligation is certified by its canonical text (`cert_terms.obligation_text`), whose SHA-256 does not
depend on the process that printed it.
"""

from __future__ import annotations

import os
from pathlib import Path

from lean_pool.checker import DEFAULT_RLIMIT, DEFAULT_SEED, PROVED, Obligation, Outcome, Z3Checker
from orchestrator import cert_schema
from orchestrator.cert_identity import identity
from orchestrator.cert_terms import BadHint, hints_to_json, obligation_text, replay_provers
from orchestrator.pipeline import Prepared
from semantics.axioms import AXIOM_TABLE_VERSION
from semantics.verdict import Report, verify


class NoCertificate(Exception):
    """The accepted hints alone do not verify the task again; the message says how it came out instead."""


def _proved(ob: Obligation, outcome: Outcome) -> dict:
    text, digest = obligation_text(ob)
    return {"name": ob.name, "property": ob.prop, "sha256": digest, "smt2": text, "backend": outcome.backend}


# The settings the replay's Z3Checker() (and every pool worker) solves with, recorded in the certificate.
SOLVING = {"z3_seed": DEFAULT_SEED, "z3_rlimit": DEFAULT_RLIMIT, "cvc5_seed": DEFAULT_SEED}


def _common(manifest: Path, document: Path, prepared: Prepared, report: Report) -> dict:
    if prepared.task.safety_only:
        raise NoCertificate("safety-only tasks (no [reference]) have no certificate or witness file format yet")
    shown = os.path.relpath(Path(manifest).absolute(), Path(document).absolute().parent)
    return {"version": cert_schema.VERSION, "manifest": shown, "task": identity(prepared.task, prepared),
            "kernel_source_text": prepared.task.kernel.source.read_text(encoding="utf-8"),
            "axioms": {"table_version": AXIOM_TABLE_VERSION, "used": sorted(report.axioms)},
            "hints": hints_to_json(report.hints)}


def certificate(manifest: Path, path: Path, prepared: Prepared, report: Report) -> cert_schema.Certificate:
    """The certificate of a verified report, to be written at `path` (the manifest is named relative to it)."""
    try:
        proof = verify(prepared.problem, Z3Checker(), replay_provers(report.hints.get))
    except BadHint as exc:
        raise NoCertificate(f"an accepted hint cannot be replayed: {exc}") from None
    if proof.verdict != "verified":
        raise NoCertificate(f"replaying the accepted hints gives {proof.verdict}: {proof.reason}")
    proved = [_proved(ob, outcome) for ob, outcome in proof.obligations if outcome.status == PROVED]
    return cert_schema.Certificate.model_validate(
        {"schema": cert_schema.CERTIFICATE, **_common(manifest, path, prepared, proof),
         "properties": proof.properties, "obligations": proved, "solving": SOLVING})


def witness(manifest: Path, path: Path, prepared: Prepared, report: Report) -> cert_schema.Witness:
    """The witness file of a refuted report: its findings and the identity of the task they refute."""
    findings = [{"property": f.prop, "message": f.message, "witness": f.witness} for f in report.findings]
    return cert_schema.Witness.model_validate(
        {"schema": cert_schema.WITNESS, **_common(manifest, path, prepared, report), "findings": findings})


def write_certificate(path: Path, manifest: Path, prepared: Prepared, report: Report) -> Path:
    cert_schema.dump(certificate(manifest, path, prepared, report), path)
    return path


def write_witness(path: Path, manifest: Path, prepared: Prepared, report: Report) -> Path:
    cert_schema.dump(witness(manifest, path, prepared, report), path)
    return path
