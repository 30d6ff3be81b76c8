"""The versions of LARK's own code that cache keys and the batch resume key carry.

A cached answer is only as good as the code that produced it: a lemma proved under yesterday's semantics,
or a batch result from before a fix to the instruction table, must not be served today. Version strings
bumped by hand are forgotten, so the version of a body of code is the SHA-256 of its source files (every
`.py` and `.lark` grammar file under it), computed once per process (~5 ms). `semantics_version()` covers
the trusted model and the checkers (`semantics/`, `lean_pool/`) and names the axiom-table version, so a
reader of a key sees which table it was made under. Nothing here imports beyond `semantics.axioms`.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from semantics import axioms

PACKAGE_ROOT = Path(__file__).resolve().parents[1]   # the directory holding semantics/, lean_pool/, ...
SOURCE_SUFFIXES = (".py", ".lark")
SEMANTICS_SOURCES = ("semantics", "lean_pool")
DIGEST_CHARS = 16


@cache
def source_digest(paths: tuple[str, ...]) -> str:
    """SHA-256 over the relative path and bytes of every source file under `paths` (folders or files,
    relative to the package root), in a fixed order. A missing path hashes as missing, not as empty."""
    digest = hashlib.sha256()
    for name in paths:
        root = PACKAGE_ROOT / name
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES)
        if not files:
            digest.update(f"{name}\0missing\0".encode())
        for path in files:
            digest.update(f"{path.relative_to(PACKAGE_ROOT).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:DIGEST_CHARS]


def semantics_version() -> str:
    """The axiom-table version and the digest of the trusted model and checkers, e.g. `2026.11.1+3fa9...`.
    Read at call time, so a changed `AXIOM_TABLE_VERSION` changes it too."""
    return f"{axioms.AXIOM_TABLE_VERSION}+{source_digest(SEMANTICS_SOURCES)}"
