"""Captured references, remembered on disk under a key that covers everything the capture depends on.

The capture subprocess costs seconds (importing torch); an unchanged reference need not pay it twice. What
it depends on (issue 13): the reference file and whatever it imports from its folder — conservatively
every `.py` file of the folder tree (`fingerprint.python_tree`), so an edited helper module is seen — the
torch and Python versions, the capture code (`semantics/torch`, by its source digest), LARK's package
version and this file's format. Files a reference reads by other means (data files, modules outside its
folder) are not seen; the entry is untrusted like every cache (DESIGN §3) and `lark check` captures afresh.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import time
from pathlib import Path

from orchestrator.fingerprint import changed_since, digest, python_files, python_tree
from orchestrator.version import package_version
from semantics.torch.capture import RefGraph, capture_reference
from semantics.version import source_digest

CAPTURE_FORMAT = "capture-v2"   # 2: keyed by the folder tree and the capture code
CAPTURE_SOURCES = ("semantics/torch",)


def cache_root() -> Path:
    """$LARK_CACHE_DIR/ref, else ~/.cache/lark/ref."""
    root = os.environ.get("LARK_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "lark") / "ref"


def reference_inputs(source: Path) -> dict[str, object]:
    """The record a capture of `source` is keyed by (and `lark batch`'s resume key includes)."""
    return {
        "format": CAPTURE_FORMAT, "lark": package_version(), "capture": source_digest(CAPTURE_SOURCES),
        "torch": importlib.metadata.version("torch"), "python": list(sys.version_info[:2]),
        "tree": python_tree(source),
    }


def capture_cached(source: Path, timeout_s: float = 180.0) -> RefGraph:
    """capture_reference, from the cache when the same inputs were captured before. The graph carries its
    own hash, checked on load; an entry is not stored when a file of the tree changed during the capture."""
    entry = cache_root() / f"{digest(reference_inputs(source))}.json"
    if entry.exists():
        try:
            return RefGraph.from_json(entry.read_text())
        except (ValueError, KeyError):
            entry.unlink(missing_ok=True)
    started_ns = time.time_ns()
    graph = capture_reference(source, timeout_s)
    if not changed_since(python_files(source), started_ns):
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(graph.to_json())
        tmp.replace(entry)
    return graph
