"""Loop-heavy kernels at KernelBench sizes: verification time of each, and the naive matrix product at
N = 512 vs N = 4096 (DESIGN §9: time flat in tensor size). Prints figures; asserts nothing."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orchestrator.cli import run_verify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CASES = ["loop_matvec", "loop_matmul_naive_512", "loop_matmul_naive_4096", "loop_mean_middle_dim",
         "loop_rowsum_per_thread", "warp_rowsum_shfl", "shared_transpose_tiled"]


def timed(case: str, runs: int) -> tuple[float, str]:
    best, verdict = float("inf"), ""
    for _ in range(runs):
        start = time.perf_counter()
        verdict = run_verify(EXAMPLES / case / "lark.toml", 600.0).verdict
        best = min(best, time.perf_counter() - start)
    return best, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    seconds = {}
    for case in CASES:
        seconds[case], verdict = timed(case, args.runs)
        print(f"{case:28} {seconds[case]:8.2f} s  ({verdict})", flush=True)
    ratio = seconds["loop_matmul_naive_4096"] / seconds["loop_matmul_naive_512"]
    print(f"naive matmul 4096 / 512   {ratio:8.2f}")


if __name__ == "__main__":
    main()
