"""The filter's answer on one mutant."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("differs", "same", "undecided", "not_compiled")


@dataclass(frozen=True)
class Decision:
    """`kind` is one of KINDS; `reason` says what showed it (the differing element, the finding, ...)."""

    kind: str
    reason: str
