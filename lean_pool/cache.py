"""The content-addressed lemma cache, as a wrapper around any `Checker` (STYLE 8).

Key: SHA-256 of (the semantics version — axiom-table version and the digest of `semantics/` and
`lean_pool/`, `semantics.version` — the backend's name and solver version, the obligation's canonical text
with its witnesses, `lean_pool.canonical`). Value: the answer and its evidence (backend, witness values).
Only facts are stored — `proved` and `refuted` — never `unknown` (a timeout today may be a proof
tomorrow; STYLE 7, KLEE). The cache is untrusted (DESIGN §3): an entry only says what a solver answered
for exactly that text, and a refutation read from it is still replayed in-process before it is reported
(`lean_pool.local_model`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from functools import cache
from pathlib import Path
from typing import Protocol

import diskcache

from lean_pool.canonical import canonical_text
from lean_pool.checker import PROVED, REFUTED, Checker, Obligation, Outcome
from lean_pool.wire import answer_of, outcome_of
from semantics import axioms, version

SOLVER_DISTRIBUTIONS = {"z3": "z3-solver", "cvc5": "cvc5"}   # backend name -> the package that is the solver


@cache
def solver_version(backend: str) -> str:
    """The installed version of a backend's solver: a new solver may answer an obligation differently."""
    try:
        return importlib.metadata.version(SOLVER_DISTRIBUTIONS[backend])
    except (KeyError, importlib.metadata.PackageNotFoundError):
        return "unknown"


def lemma_version(backend: str) -> str:
    """Everything besides the text that an entry's answer depends on."""
    return f"{version.semantics_version()}|{backend} {solver_version(backend)}"


def cache_key(text: str, backend: str, versions: str) -> str:
    digest = hashlib.sha256()
    for part in (versions, backend, text):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def lemma_dir() -> Path:
    """$LARK_CACHE_DIR/lemmas, else ~/.cache/lark/lemmas (beside the frontends' PTX cache)."""
    root = os.environ.get("LARK_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "lark") / "lemmas"


class LemmaStore(Protocol):
    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, entry: dict) -> None: ...


class DiskLemmaStore:
    """diskcache on local disk: safe for several processes on one machine (SQLite underneath)."""

    def __init__(self, directory: Path | None = None):
        self.directory = directory or lemma_dir()
        self._cache = diskcache.Cache(str(self.directory))

    def get(self, key: str) -> dict | None:
        return self._cache.get(key)

    def put(self, key: str, entry: dict) -> None:
        self._cache.set(key, entry)

    def __len__(self) -> int:
        return len(self._cache)


class CachingChecker:
    def __init__(self, inner: Checker, store: LemmaStore):
        self.inner = inner
        self.store = store
        self.name = inner.name

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        key = cache_key(canonical_text(obligation), self.name, lemma_version(self.name))
        entry = self.store.get(key)
        if entry is not None:   # no solver time spent now: the stored seconds are not this run's
            return outcome_of({**entry, "seconds": 0.0}, entry["backend"], cached=True)
        outcome = self.inner.check(obligation, timeout_s)
        outcome.cached = False
        if outcome.status in (PROVED, REFUTED):
            self.store.put(key, {**answer_of(outcome), "backend": outcome.backend,
                                 "axiom_table_version": axioms.AXIOM_TABLE_VERSION})
        return outcome
