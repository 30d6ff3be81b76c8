"""What the core decides and what it answers: a bound task (`Problem`), its untrusted hint sources (`Provers`)
and the decision (`Report`). Data only, shared by `lark verify` (`semantics.verdict`) and `lark check`
(`semantics.derive` with a certificate's proof)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lean_pool.checker import Obligation, Outcome
from semantics.proof import Theorem
from semantics.properties.common import Finding
from semantics.ptx.ast import Kernel
from semantics.ptx.machine import Buffer, Launch
from semantics.ptx.state import Precision


@dataclass
class Provers:
    """Untrusted hint sources, each called with a key that names what it is asked about, so a certificate
    can record the accepted hints and `lark check` can replay exactly those:
    `inverse(key, index, variables, e)` proposes the writer of output element e;
    `bounds(key, loop)` proposes iteration bounds of a loop;
    `reindex(key, source, source_var, target, target_var)` proposes how a reduction's index maps onto
    another's; `split(key, dividend, divisor)` proposes quotient and remainder of an index division.
    `search(kind, key, args, obligations, timeout_s)`, optional, explores alternative hints for a goal before
    the core asks: given the core's own map from a hint to the obligations that prove it, it returns the
    hints to try (the winner of an untrusted search, orchestrator/search.py). The core checks what it uses
    exactly as it checks any prover's hint; today loop bounds, exact exits and reductions' reindexings φ
    are searched."""

    inverse: Callable
    bounds: Callable
    reindex: Callable
    split: Callable
    search: Callable | None = None


@dataclass
class Report:
    verdict: str
    properties: dict[str, str]
    findings: list[Finding]
    reason: str | None
    axioms: list[str] = field(default_factory=list)
    obligations: list[tuple[Obligation, Outcome]] = field(default_factory=list)
    seconds: float = 0.0
    hints: dict[str, object] = field(default_factory=dict)   # key -> accepted hint (z3 terms)
    # property -> how its top goals were met: {"goals": n, "stated": exactly by a theorem, "rewritten": by a
    # theorem of the form tactics rewrote the goal to} (`semantics.goals.established`)
    goals: dict[str, dict[str, int]] = field(default_factory=dict)
    # What the passes produced, for `lark verify --show` (never serialised, never part of the verdict): the
    # symbolic thread's accesses, the top goals per property, the theorems each property's checks made, and
    # how each goal stands (`standings`).
    accesses: list = field(default_factory=list)
    expected: dict[str, list] = field(default_factory=dict)
    theorems: dict[str, list[Theorem]] = field(default_factory=dict)
    standings: dict[str, list[tuple[str, str]]] = field(default_factory=dict)   # property -> (goal, how it stands)
    # The theorems of the side conditions the derivation of the goals rested on (loop exits and bounds,
    # shared-memory writers, supersession, defined registers, ...: `semantics.checkers.Through`), certified
    # with the theorems that state the goals.
    facts: list[Theorem] = field(default_factory=list)


@dataclass
class Problem:
    """Everything the core needs, already bound: no files, no compilers, no torch."""

    kernel: Kernel
    launch: Launch
    buffers: dict[str, Buffer]
    args: list[object]                                    # per kernel parameter: Buffer, literal or z3 term
    references: dict[str, Callable] | None               # output buffer -> element function
    reference_problem: str | None = None                 # why references is None
    shared_symbols: set[str] = field(default_factory=set)
    source_files: dict[int, str] = field(default_factory=dict)  # PTX `.file` index -> source path
    language: str = "ptx"                                # cuda | triton | ptx: how witnesses name blocks
    precision: Precision = field(default_factory=Precision)  # how far float conversions may narrow
    safety_only: bool = False                            # no reference: equivalence is not applicable
    constants: dict[int, str] = field(default_factory=dict)  # the reference's float32 constants: bits -> name
    exact_constants: bool = False                        # --exact-constants: no literal is identified with one
