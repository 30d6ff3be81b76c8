"""Capturing many small references at once for the ATen-semantics tests (one worker call for all)."""

from __future__ import annotations

from pathlib import Path

from semantics.torch.capture import RefGraph, capture_references


def capture_sources(directory: Path, sources: dict[str, str], timeout_s: float) -> dict[str, RefGraph]:
    """Each source (name -> ref.py text) written under `directory` and captured; every capture must succeed."""
    paths = []
    for name, text in sources.items():
        paths.append(directory / f"{name}.py")
        paths[-1].write_text(text)
    results = capture_references(paths, timeout_s=timeout_s)
    for name, result in zip(sources, results, strict=True):
        assert isinstance(result, RefGraph), f"{name}: {result}"
    return dict(zip(sources, results, strict=True))
