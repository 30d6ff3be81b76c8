"""`lark batch` over examples/: cold-cache vs warm-cache batch time, and throughput with 1 vs 2 workers.

Cold: a fresh $LARK_CACHE_DIR, so nothing is cached — compiled PTX, captured references, lemmas, results.
Warm: the same directory again, every task verified again (`rerun`: the result store is not asked, so
the fleet's throughput on warm caches is what is timed). Stored: the same directory and a fresh state file,
as a later batch: every unchanged task answered from the result store, no fleet. Each worker count gets
its own local Ray instance and cache directory; the instance's start-up is not timed, the creation of the
fleet's actors is (`bench/warm_cold.py` times whole `lark batch` processes, Ray start-up included). A
benchmark, not a test: it asserts nothing (DESIGN §9).
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


def timed_batch(manifests: list[Path], workers: int, scratch: Path, label: str,
                rerun: bool = False) -> tuple[float, dict[str, str]]:
    start = time.perf_counter()
    outcomes = run_batch(manifests, State(scratch / f"{label}.jsonl"), workers=workers, show_progress=False,
                         rerun=rerun)
    seconds = time.perf_counter() - start
    return seconds, {o.result.name: o.result.verdict for o in outcomes}


def cold_and_warm(manifests: list[Path], workers: int, scratch: Path) -> tuple[float, float, float, int]:
    """(cold, warm and stored seconds, tasks whose verdict differs from the cold run's) for one worker count."""
    os.environ["LARK_CACHE_DIR"] = str(scratch / f"cache-{workers}")   # forwarded to the Ray workers
    with ray_session(workers=2):
        cold, cold_verdicts = timed_batch(manifests, workers, scratch, f"cold-{workers}")
        warm, warm_verdicts = timed_batch(manifests, workers, scratch, f"warm-{workers}", rerun=True)
        stored, stored_verdicts = timed_batch(manifests, workers, scratch, f"stored-{workers}")
    differ = sum(cold_verdicts[name] != other.get(name) for other in (warm_verdicts, stored_verdicts)
                 for name in cold_verdicts)
    return cold, warm, stored, differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", nargs="?", type=Path, default=EXAMPLES)
    args = parser.parse_args()
    manifests = discover(args.source)
    with tempfile.TemporaryDirectory(prefix="lark-bench-") as tmp:
        scratch = Path(tmp)
        runs = {workers: cold_and_warm(manifests, workers, scratch) for workers in (1, 2)}
    n = len(manifests)
    cold2, warm2, stored2, _ = runs[2]
    print(f"{n} tasks from {args.source}")
    print(f"cold cache, 2 workers              {cold2:8.2f} s")
    print(f"warm cache, re-verified, 2 workers {warm2:8.2f} s")
    print(f"answered from stored results       {stored2:8.2f} s")
    print(f"ratio cold/warm re-verified        {cold2 / warm2:8.2f}")
    print(f"ratio cold/stored                  {cold2 / stored2:8.2f}")
    for cache, index in (("cold", 0), ("warm", 1)):
        one, two = runs[1][index], runs[2][index]
        print(f"{cache} throughput  1 worker {n / one:6.2f} tasks/s   2 workers {n / two:6.2f} tasks/s   "
              f"speed-up {one / two:5.2f}")
    print(f"verdicts differing from the cold run's: {runs[2][3] + runs[1][3]}")


if __name__ == "__main__":
    main()
