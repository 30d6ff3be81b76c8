"""Running `lark verify --json` on a mutant, in its own process so a hang or a crash costs one mutant only.

The CLI is the contract (DESIGN §2.2), so the benchmark uses it as a user would: `--timeout` is LARK's own
budget, and the process is killed `GRACE_S` later if it has not answered. A killed or crashed run is
`error` with what it printed, never a verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GRACE_S = 120


def lark_verify(manifest: Path, timeout_s: float) -> dict:
    """The `--json` object of `lark verify` on `manifest` (verdict `error` with a reason when there is none)."""
    command = [sys.executable, "-c", "from orchestrator.cli import main; main()", "verify", str(manifest), "--json",
               "--timeout", str(timeout_s)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s + GRACE_S, env=env)
    except subprocess.TimeoutExpired:
        return {"verdict": "error", "reason": f"no answer within {timeout_s + GRACE_S} s"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"verdict": "error", "reason": f"exit {done.returncode}: {done.stderr.strip()[-500:]}"}
