"""Verification time must not grow with tensor size: the same relu kernel at 64x64 and 4096x393216.

Prints both wall times (best of N runs each, reference capture included) and their ratio. A benchmark,
not a test: it asserts nothing; DESIGN §9 asks for a ratio near 1.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orchestrator.job import run_verify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def best_time(manifest: Path, runs: int) -> tuple[float, str]:
    best, verdict = float("inf"), ""
    for _ in range(runs):
        start = time.perf_counter()
        result = run_verify(manifest, 600.0)
        best = min(best, time.perf_counter() - start)
        verdict = result.verdict
    return best, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    small, v_small = best_time(EXAMPLES / "relu_64x64" / "lark.toml", args.runs)
    large, v_large = best_time(EXAMPLES / "relu_4096x393216" / "lark.toml", args.runs)
    print(f"relu 64x64          {small:8.3f} s  ({v_small})")
    print(f"relu 4096x393216    {large:8.3f} s  ({v_large})")
    print(f"ratio large/small   {large / small:8.3f}")


if __name__ == "__main__":
    main()
