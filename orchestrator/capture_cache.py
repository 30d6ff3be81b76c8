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
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from orchestrator.fingerprint import changed_since, digest, python_files, python_tree
from orchestrator.version import package_version
from semantics.torch.capture import RefGraph, capture_reference, capture_references
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
    _store(entry, source, graph, started_ns)
    return graph


def capture_ahead(sources: list[Path], timeout_s: float = 180.0, workers: int = 1) -> int:
    """Fill the cache for the `sources` not in it yet, with `workers` warm capture workers (each imports
    torch once and forks a child per reference: a fraction of a second each instead of the seconds of a
    cold capture, so a batch of many tasks pays torch's start `workers` times, not once per task).
    A reference that fails is left out: its job captures it again and reports the error in its own result.
    Returns the number of references captured."""
    entries = {Path(s): cache_root() / f"{digest(reference_inputs(Path(s)))}.json" for s in dict.fromkeys(sources)}
    todo = [s for s, entry in entries.items() if not entry.exists()]
    chunks = [todo[i::workers] for i in range(max(min(workers, len(todo)), 1))]
    started_ns = time.time_ns()
    with ThreadPoolExecutor(len(chunks)) as pool:
        captured = list(pool.map(lambda chunk: capture_references(chunk, timeout_s) if chunk else [], chunks))
    stored = 0
    for chunk, graphs in zip(chunks, captured, strict=True):
        for source, graph in zip(chunk, graphs, strict=True):
            if isinstance(graph, RefGraph):
                stored += _store(entries[source], source, graph, started_ns)
    return stored


def _store(entry: Path, source: Path, graph: RefGraph, started_ns: int) -> bool:
    """Write `graph` at `entry` (atomically), unless a file of the reference's tree changed since the
    capture started (it may then not be the tree the key names)."""
    if changed_since(python_files(source), started_ns):
        return False
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(graph.to_json())
    tmp.replace(entry)
    return True
