"""`lark batch` over examples/: cold-cache vs warm-cache batch time, and throughput with 1 vs 2 workers.

Cold: a fresh $LARK_CACHE_DIR, so nothing is cached — compiled PTX, captured references, lemmas. Warm:
the same directory again (a fresh results file each time, so no task is skipped as finished). Each
worker count gets its own local Ray instance and cache directory; the instance's start-up is not timed,
the creation of the fleet's actors is. A benchmark, not a test: it asserts nothing (DESIGN §9).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from actors.cluster import ray_session
from orchestrator.batch import State, discover, run_batch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def timed_batch(manifests: list[Path], workers: int, scratch: Path, label: str) -> tuple[float, dict[str, str]]:
    start = time.perf_counter()
    outcomes = run_batch(manifests, State(scratch / f"{label}.jsonl"), workers=workers, show_progress=False)
    seconds = time.perf_counter() - start
    return seconds, {o.result.name: o.result.verdict for o in outcomes}


def cold_and_warm(manifests: list[Path], workers: int, scratch: Path) -> tuple[float, float, int]:
    """(cold seconds, warm seconds, tasks whose verdict differs between the two) for one worker count."""
    os.environ["LARK_CACHE_DIR"] = str(scratch / f"cache-{workers}")   # forwarded to the Ray workers
    with ray_session(workers=2):
        cold, cold_verdicts = timed_batch(manifests, workers, scratch, f"cold-{workers}")
        warm, warm_verdicts = timed_batch(manifests, workers, scratch, f"warm-{workers}")
    differ = sum(cold_verdicts[name] != warm_verdicts.get(name) for name in cold_verdicts)
    return cold, warm, differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", nargs="?", type=Path, default=EXAMPLES)
    args = parser.parse_args()
    manifests = discover(args.source)
    with tempfile.TemporaryDirectory(prefix="lark-bench-") as tmp:
        scratch = Path(tmp)
        runs = {workers: cold_and_warm(manifests, workers, scratch) for workers in (1, 2)}
    n = len(manifests)
    cold2, warm2, differ2 = runs[2]
    print(f"{n} tasks from {args.source}")
    print(f"cold cache, 2 workers   {cold2:8.2f} s")
    print(f"warm cache, 2 workers   {warm2:8.2f} s")
    print(f"ratio cold/warm         {cold2 / warm2:8.2f}")
    for cache, index in (("cold", 0), ("warm", 1)):
        one, two = runs[1][index], runs[2][index]
        print(f"{cache} throughput  1 worker {n / one:6.2f} tasks/s   2 workers {n / two:6.2f} tasks/s   "
              f"speed-up {one / two:5.2f}")
    print(f"verdicts differing between cold and warm runs: {differ2 + runs[1][2]}")


if __name__ == "__main__":
    main()
