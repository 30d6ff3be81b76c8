"""Cold vs warm `lark batch` over a corpus, each a fresh `lark batch` process (imports and Ray start-up timed).

* cold: a fresh $LARK_CACHE_DIR and state file: every task compiled, captured, verified, on a new local Ray
  instance;
* warm: the same cache directory and a *fresh* state file (another report, another clone): every unchanged
  task is answered from the result store, with no Ray, compile or capture (issue 19, item 8);
* warm --rerun: the same cache, every task verified again on Ray (compiled kernels, captured references and
  lemmas served from their caches): what the result store saves on top of the other caches.

Prints each time, the ratios and the batch's own stderr line on what was answered from stored results. A
benchmark, not a test: it asserts nothing (DESIGN §9). `python bench/warm_cold.py [SOURCE] [--workers N]`.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO / "bench" / "warm_cold_tasks.txt"
ANSWERED = re.compile(r"lark batch: \d+ of \d+ tasks answered from stored results[^\n]*")


def batch(source: Path, cache: Path, state: Path, workers: int, *extra: str) -> tuple[float, str, str]:
    """(seconds, the answered-from-stored-results line, the verdict lines) of one `lark batch` process."""
    env = {**os.environ, "LARK_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", "from orchestrator.cli import main; main()", "batch", str(source),
               "--state", str(state), "--workers", str(workers), *extra]
    start = time.perf_counter()
    ran = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - start
    line = ANSWERED.search(ran.stderr)
    verdicts = "\n".join(v.replace("  (resumed)", "") for v in ran.stdout.splitlines())
    return seconds, line.group(0) if line else f"(no answered line; exit {ran.returncode})", verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lark-warm-cold-") as tmp:
        scratch = Path(tmp)
        cold, cold_line, cold_verdicts = batch(args.source, scratch / "cache", scratch / "cold.jsonl", args.workers)
        warm, warm_line, warm_verdicts = batch(args.source, scratch / "cache", scratch / "warm.jsonl", args.workers)
        rerun, _, rerun_verdicts = batch(args.source, scratch / "cache", scratch / "rerun.jsonl", args.workers,
                                         "--rerun")
    print(f"{len(cold_verdicts.splitlines())} tasks from {args.source}, {args.workers} workers, "
          f"each a fresh `lark batch` process")
    print(f"cold                       {cold:8.2f} s   {cold_line}")
    print(f"warm (fresh state file)    {warm:8.2f} s   {warm_line}")
    print(f"warm --rerun (on Ray)      {rerun:8.2f} s")
    print(f"ratio cold/warm            {cold / warm:8.1f}")
    print(f"ratio cold/warm --rerun    {cold / rerun:8.1f}")
    same = cold_verdicts == warm_verdicts == rerun_verdicts
    print(f"verdicts the same in all three runs: {'yes' if same else 'NO'}")
    if not same:
        print(f"cold:\n{cold_verdicts}\nwarm:\n{warm_verdicts}\nrerun:\n{rerun_verdicts}")


if __name__ == "__main__":
    main()
