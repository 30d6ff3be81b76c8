"""Loop-heavy kernels at KernelBench sizes: verification time of each, the naive matrix product at
N = 512 vs N = 4096, and the row scan at 128 x 32768 vs 4096 x 262144 (DESIGN §9: time flat in tensor
size). Prints figures; asserts nothing."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from orchestrator.job import run_verify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CASES = ["loop_matvec", "loop_matmul_naive_512", "loop_matmul_naive_4096", "loop_mean_middle_dim",
         "loop_rowsum_per_thread", "warp_rowsum_shfl", "shared_transpose_tiled", "loop_cumsum_row",
         "loop_cumsum_exclusive", "loop_cumprod_row", "loop_cumprod_exclusive", "loop_cumsum_row_ragged",
         "loop_cumsum_exclusive_ragged", "loop_cumprod_row_ragged", "loop_cumprod_exclusive_ragged",
         "loop_row_var_biased",
         "loop_row_var_unbiased_bug", "loop_tiled_matmul", "loop_tiled_matmul_missing_barrier",
         "loop_tiled_matmul_wrong_tile_index", "loop_block_softmax", "loop_block_softmax_missing_barrier",
         "loop_block_layernorm", "loop_block_layernorm_unbiased"]


def timed(case: str | Path, runs: int) -> tuple[float, str]:
    manifest = case / "lark.toml" if isinstance(case, Path) else EXAMPLES / case / "lark.toml"
    best, verdict = float("inf"), ""
    for _ in range(runs):
        start = time.perf_counter()
        verdict = run_verify(manifest, 600.0).verdict
        best = min(best, time.perf_counter() - start)
    return best, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    seconds = {}
    for case in CASES:
        seconds[case], verdict = timed(case, args.runs)
        print(f"{case:36} {seconds[case]:8.2f} s  ({verdict})", flush=True)
    ratio = seconds["loop_matmul_naive_4096"] / seconds["loop_matmul_naive_512"]
    print(f"naive matmul 4096 / 512   {ratio:8.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "loop_cumsum_row_4096x262144"
        shutil.copytree(EXAMPLES / "loop_cumsum_row", big)
        for name, old, new in (("lark.toml", "[4, 1, 1]", "[128, 1, 1]"), ("lark.toml", "128, 32768]", "4096, 262144]"),
                               ("ref.py", "rows = 128", "rows = 4096"), ("ref.py", "cols = 32768", "cols = 262144")):
            path = big / name
            path.write_text(path.read_text().replace(old, new))
        seconds["big"], verdict = timed(big, args.runs)
        print(f"{'loop_cumsum_row 4096x262144':36} {seconds['big']:8.2f} s  ({verdict})", flush=True)
    print(f"row scan large / small    {seconds['big'] / seconds['loop_cumsum_row']:8.2f}")


if __name__ == "__main__":
    main()
