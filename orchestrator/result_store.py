"""Finished batch results under their resume key, shared by every `lark batch` on one cache directory.

A batch's state file (`batch.State`) resumes that batch; this store answers any later batch whose task has
the same key — another report name, another state file, a fresh clone — so a warm rerun of an unchanged
corpus starts no Ray, compiles nothing and captures nothing (issue 19, item 8). The key is the batch's
resume key (`batch.task_key`), which covers every input of the result: the manifest, the files the kernel's
compile read, the reference's folder tree, LARK's, the semantics' and the solvers' versions, and the options
(budgets and the paths of the documents asked for).

Only results that the same inputs would give again are stored: `verified` and `refuted`, and an `unknown`
whose reason names no budget, timeout, cancellation or crash (STYLE 7: a solver's give-up on time is never
kept as a fact). Errors are not stored. An entry carries the text of the certificate or witness its run
wrote, so a hit puts the same documents where the rerun asks for them; a hit whose documents are missing
is a miss. Like every cache, the store is untrusted (DESIGN §3): `lark check` re-checks a certificate from
the sources, and `lark batch --rerun` ignores the store.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from orchestrator.result import Result

STORE_FORMAT = "results-v1"
# Words in an unknown's reason that say it depended on time, load or luck rather than on the task alone.
TRANSIENT = ("budget", "timeout", "timed out", "cancel", "interrupt", "internal error", "out of memory",
             "lost")
DOCUMENT_OF = {"verified": "certificate", "refuted": "witness"}   # the document each verdict writes


def store_root() -> Path:
    """$LARK_CACHE_DIR/results, else ~/.cache/lark/results (beside the compiled kernels and captures)."""
    root = os.environ.get("LARK_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "lark") / "results"


def reproducible(result: Result) -> bool:
    """Whether a rerun on the same inputs gives this result again, so that storing it loses nothing."""
    if result.verdict in DOCUMENT_OF:
        return True
    reason = (result.reason or "").lower()
    return result.verdict == "unknown" and not any(word in reason for word in TRANSIENT)


class ResultStore:
    """One JSON file per key: the result and the documents its run wrote (path -> text)."""

    def __init__(self, root: Path | None = None):
        self.root = root or store_root()

    def _entry(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def put(self, key: str, result: Result, documents: Mapping[str, Path] | None = None) -> bool:
        """Store `result` if it is reproducible, with the document its verdict wrote (`documents`: kind ->
        path, as the run was asked for them) if that file can be read here. Returns whether it was stored."""
        if not reproducible(result):
            return False
        texts = {}
        kind = DOCUMENT_OF.get(result.verdict)
        if documents and kind in documents:
            try:
                texts[kind] = documents[kind].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                pass   # written on another node, or not at all: a hit that needs it will be a miss
        entry = {"format": STORE_FORMAT, "result": result.to_json(), "documents": texts}
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self._entry(key).with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry), encoding="utf-8")
        tmp.replace(self._entry(key))
        return True

    def get(self, key: str, documents: Mapping[str, Path] | None = None) -> Result | None:
        """The stored result of `key`, or None. With `documents` (kind -> path), the stored document of the
        result's verdict is written there first; when it is not stored or cannot be written, None."""
        try:
            entry = json.loads(self._entry(key).read_text(encoding="utf-8"))
            if entry.get("format") != STORE_FORMAT:
                return None
            result = Result(**entry["result"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        kind = DOCUMENT_OF.get(result.verdict)
        if documents and kind in documents:
            text = entry.get("documents", {}).get(kind)
            if not isinstance(text, str) or not _write(documents[kind], text):
                return None
        return result


def _write(path: Path, text: str) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        return False
    return True
