"""How each property's top goals of a task were met by the proof kernel's theorems (`Report.goals`):

    PYTHONPATH=$PWD python bench/kernel_goals.py examples/relu_64x64/lark.toml [...]

prints per task the verdict, per proved property the number of goals, those a theorem states exactly and those
met only in the form tactics rewrote them to (equivalence lanes where a rewrite has no kernel equation yet: the
part still trusted to a tactic, which `lark check` refuses), and the number of side conditions of the goals'
derivation proved as theorems (`Report.facts`); then totals for equivalence and for every property.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lean_pool.checker import Z3Checker
from orchestrator.job import PROVERS
from orchestrator.pipeline import prepare
from semantics.verdict import verify

if __name__ == "__main__":
    equivalence = {"goals": 0, "stated": 0, "rewritten": 0}
    every = {"goals": 0, "stated": 0, "rewritten": 0, "facts": 0}
    for manifest in sys.argv[1:]:
        prepared = prepare(Path(manifest))
        report = verify(prepared.problem, Z3Checker(), PROVERS)
        print(Path(manifest).parent.name, report.verdict, report.goals, f"facts {len(report.facts)}", flush=True)
        for prop, counts in report.goals.items():
            for key in equivalence:
                every[key] += counts.get(key, 0)
                if prop == "equivalence":
                    equivalence[key] += counts.get(key, 0)
        every["facts"] += len(report.facts)
    print(f"equivalence, all tasks: {equivalence['goals']} goals, {equivalence['stated']} stated by a theorem, "
          f"{equivalence['rewritten']} met only in rewritten form (trusted to a tactic)")
    print(f"every property, all tasks: {every['goals']} goals, {every['stated']} stated by a theorem, "
          f"{every['rewritten']} met only in rewritten form; {every['facts']} side conditions proved as theorems")
