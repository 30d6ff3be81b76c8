"""What a cached artifact was made from: the files it read, each with the SHA-256 of its bytes.

Every cache in LARK (compiled kernels, captured references, batch results) is keyed by everything that
decides its entry (issue 13: a header edited after a verified run was answered from a cache keyed on the
`.cu` text alone). Two shapes of input appear:

* a *recorded* list, for inputs known only once the artifact is made (the headers nvcc read, from its
  `-MD` file): the entry stores `[path, sha256]` pairs and is valid only while every file still has its
  hash (ccache's "direct mode");
* a *tree*, for Python, whose imports cannot be known without running it: every `.py` file under the
  entry file's folder, conservatively, named relative to that folder so an unchanged copy elsewhere hashes
  the same. Hidden folders (`.git`, `.venv`) are skipped: a name starting with `.` cannot be imported.

A file edited while a compiler reads it could pair old output with new bytes, so `changed_since` lets a
cache decline to store an entry whose inputs were modified after the work began.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

FileHashes = list[list[str]]   # [[path, sha256], ...], sorted: JSON-friendly and part of keys
MISSING = "missing"


def sha256_file(path: Path) -> str:
    """The file's SHA-256, or `missing` when it cannot be read (a deleted header must not match)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return MISSING


def digest(record: object) -> str:
    """SHA-256 of a JSON-able record, keys sorted: the one way keys are made from records here."""
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def hash_files(paths: Iterable[Path]) -> FileHashes:
    """`[[absolute path, sha256], ...]` for each distinct file, sorted by path."""
    unique = sorted({str(Path(p).resolve()) for p in paths})
    return [[p, sha256_file(Path(p))] for p in unique]


def unchanged(records: FileHashes) -> bool:
    """Whether every recorded file still has the recorded hash."""
    return all(sha256_file(Path(path)) == sha for path, sha in records)


def python_files(main: Path) -> list[Path]:
    """Every `.py` file under `main`'s folder, hidden folders skipped: what `main` could import from there."""
    root = main.resolve().parent
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        found.extend(Path(folder) / f for f in files if f.endswith(".py"))
    return sorted(found)


def python_tree(main: Path) -> dict[str, object]:
    """The tree of `main` for a key: its own name and `[[path relative to its folder, sha256], ...]`."""
    root = main.resolve().parent
    files = [[p.relative_to(root).as_posix(), sha256_file(p)] for p in python_files(main)]
    return {"main": main.name, "files": files}


def changed_since(paths: Iterable[Path], started_ns: int) -> bool:
    """Whether any file was modified at or after `started_ns` (time.time_ns()), or cannot be read."""
    try:
        return any(Path(p).stat().st_mtime_ns >= started_ns for p in paths)
    except OSError:
        return True


# Make's prerequisite syntax as nvcc -MD writes it: `target : a.cu \` + newline + `  b.h ...`; a space in
# a path is `\ `, a `$` is `$$`.
_CONTINUATION = re.compile(r"\\\r?\n")
_RULE = re.compile(r"^(?:\\.|[^:\\\n])+:(?=\s|$)(?P<prerequisites>.*)$", re.MULTILINE)
_WORD = re.compile(r"(?:\\.|[^\s\\])+")


def make_prerequisites(text: str, relative_to: Path) -> list[Path]:
    """The files a Make dependency file lists as prerequisites, relative ones resolved against
    `relative_to` (the compiler's working directory)."""
    joined = _CONTINUATION.sub(" ", text)
    found = []
    for rule in _RULE.finditer(joined):
        for word in _WORD.findall(rule.group("prerequisites")):
            name = re.sub(r"\\(.)", r"\1", word).replace("$$", "$")
            found.append(relative_to / name)
    return found
