"""LARK's own version, as the batch resume key and the compile and capture caches carry it.

`lark_version()` is the package version and the digest of every package's source (`semantics.version`):
a result that `lark batch` recorded before any change to LARK is not a result of today's LARK. The caches
of compiled kernels and captured references depend on less (the frontend, the capture code) and key on
just those sources; see `frontends` and `pipeline`.
"""

from __future__ import annotations

import importlib.metadata

from semantics.version import source_digest

PACKAGE = "lark-verifier"
LARK_SOURCES = ("orchestrator", "actors", "semantics", "lean_pool")


def package_version() -> str:
    """The installed distribution's version; `unknown` when LARK runs from a tree that is not installed."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def lark_version() -> str:
    """`0.1.0+<digest of all of LARK's sources>`."""
    return f"{package_version()}+{source_digest(LARK_SOURCES)}"
