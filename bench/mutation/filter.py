"""Which mutants really differ from their example: the one function `decide`.

A mutant counts only when it is shown to compute something else. Three stages, cheapest first:
1. it must compile and parse (a mutant that does not is `not_compiled`, out of every count);
2. PTX equal to the original's, debug lines aside, is `same` (the compiler saw through the edit);
   PTX with a narrowing float conversion (f32 to f16, bf16, tf32, fp8) the original lacks `differs` by
   contract: DESIGN §3 makes such a kernel `unknown` unless --allow-narrowing, while the reals (and so the
   interpreter) read the conversion as the identity;
3. the concrete PTX interpreter (`semantics.concrete`, written apart from the symbolic executor) runs the
   original and the mutant on the same concrete inputs, on the first and last block of the grid; the
   mutant `differs` when an output element both runs wrote gets another value, or when the mutant has a
   finding (out of bounds, race, barrier divergence, an undefined register or shared read).
Anything the interpreter cannot settle (an instruction it lacks, a step budget spent, a float difference
small enough to be noise, elements written by one run only: the threads and blocks left out may write
them) is `undecided`, never `differs`.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.mutation import concrete_run
from bench.mutation.decision import Decision
from orchestrator.manifest import IntakeError
from orchestrator.pipeline import Prepared, prepare
from semantics.errors import Unsupported
from semantics.torch.capture import ReferenceError as ReferenceCaptureError

DEBUG_LINE = re.compile(r"^\s*(\.loc|\.file|//|\$L__(tmp|func)\w*:)")
NARROWING = re.compile(r"\bcvt(?:\.\w+)*\.(f16|bf16|tf32|e4m3x2|e5m2x2|f16x2|bf16x2)\.f32\b")


def code_lines(ptx: str) -> list[str]:
    """The PTX without its debug lines and trailing comments: what the machine runs."""
    return [line.split("//")[0].rstrip() for line in ptx.splitlines() if line.strip() and not DEBUG_LINE.match(line)]


def narrowings(ptx: str) -> int:
    return len(NARROWING.findall(ptx))


def prepare_mutant(manifest: Path) -> Prepared | Decision:
    try:
        return prepare(manifest)
    except (IntakeError, ReferenceCaptureError) as exc:
        return Decision("not_compiled", str(exc).splitlines()[0][:200])
    except Unsupported as exc:
        return Decision("undecided", f"unsupported: {exc}")


def decide(original: Prepared, manifest: Path, baseline: concrete_run.Outcome | None = None) -> Decision:
    """Does the mutant at `manifest` compute something other than `original` does? `baseline` is the
    original's concrete outcome when the caller already has it (it is the same for every mutant)."""
    mutant = prepare_mutant(manifest)
    if isinstance(mutant, Decision):
        return mutant
    if code_lines(mutant.compiled.ptx) == code_lines(original.compiled.ptx):
        return Decision("same", "the same PTX")
    if narrowings(mutant.compiled.ptx) > narrowings(original.compiled.ptx):
        return Decision("differs", "a narrowing float conversion the original lacks (DESIGN §3: unknown unless "
                                   "--allow-narrowing)")
    if baseline is None:
        baseline = concrete_run.outcome(original.problem, whole_blocks=True)
    if baseline.findings:   # the original itself is flagged: no finding of the mutant tells them apart
        return concrete_run.compare(baseline, baseline)
    if baseline.undecided:  # no values to compare with, but a finding of the mutant is wrong on its own
        alone = concrete_run.outcome(mutant.problem, max_steps=concrete_run.FINDINGS_ONLY_STEPS)
        if alone.findings:
            return Decision("differs", "{}: {} (the original ran past the budget, clean)".format(*alone.findings[0]))
        return concrete_run.compare(baseline, baseline)
    return concrete_run.compare(baseline, concrete_run.outcome(mutant.problem))
