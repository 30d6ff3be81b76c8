"""How each property's top goals of a task were met by the proof kernel's theorems (`Report.goals`):

    PYTHONPATH=$PWD python bench/kernel_goals.py examples/relu_64x64/lark.toml [...]

prints per task the verdict and, per proved property, the number of goals, those a theorem states exactly,
and those met only in the form tactics rewrote them to (equivalence lanes whose comprehensions the matcher
named, where a rewrite has no kernel equation yet: the part still trusted to a tactic), and a total line for
equivalence.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lean_pool.checker import Z3Checker
from orchestrator.job import PROVERS
from orchestrator.pipeline import prepare
from semantics.verdict import verify

if __name__ == "__main__":
    totals = {"goals": 0, "stated": 0, "rewritten": 0}
    for manifest in sys.argv[1:]:
        prepared = prepare(Path(manifest))
        report = verify(prepared.problem, Z3Checker(), PROVERS)
        print(Path(manifest).parent.name, report.verdict, report.goals, flush=True)
        for key in totals:
            totals[key] += report.goals.get("equivalence", {}).get(key, 0)
    print(f"equivalence, all tasks: {totals['goals']} goals, {totals['stated']} stated by a theorem, "
          f"{totals['rewritten']} met only in rewritten form (trusted to a tactic)")
