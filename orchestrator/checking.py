"""`lark check FILE`: read the document and hand it to its checker, a certificate's or a witness's.

Each checker is imported only when its kind of document is read: a certificate's check (`cert_check`) imports no
tactic and runs no search (tests/test_certificate.py lists what it imported), and a witness's replay
(`cert_witness`) needs the property checks that build its obligations.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator import cert_schema

UNREADABLE = 3


def run_check(path: Path, solver: str) -> tuple[int, str]:
    """Exit status and text for `lark check PATH`: 0 holds, 1 rejected, 3 not a readable document or its task
    not found (cannot check)."""
    try:
        document = cert_schema.load(path)
    except cert_schema.BadDocument as exc:
        return UNREADABLE, f"error: {exc}"
    if isinstance(document, cert_schema.Certificate):
        from orchestrator.cert_check import check_document
    else:
        from orchestrator.cert_witness import check_document
    return check_document(document, Path(path), solver)
