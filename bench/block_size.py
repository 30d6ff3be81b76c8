"""A Triton row reduction's verification time as the autotuner's BLOCK_SIZE and num_warps grow (issue 16,
item 7): examples/triton_row_sum_loop (512 rows of 100000 columns) at BLOCK 1024 / 4 warps, 4096 / 8 warps and
16384 / 8 warps, each in a fresh cache directory (cold). The issue asks the largest to take at most twice the
smallest. Prints figures; asserts nothing."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from orchestrator.job import run_verify

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "triton_row_sum_loop"
CONFIGS = [(1024, 4), (4096, 8), (16384, 8)]


def task(root: Path, block: int, warps: int) -> Path:
    """A copy of the example with its BLOCK constexpr and num_warps replaced."""
    folder = root / f"block{block}_warps{warps}"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "lark.toml"
    text = re.sub(r"BLOCK = \d+", f"BLOCK = {block}", manifest.read_text())
    manifest.write_text(re.sub(r"num_warps = \d+", f"num_warps = {warps}", text))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=float, default=600.0, help="each task's --timeout (seconds)")
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory(prefix="lark-block-size-") as tmp:
        root = Path(tmp)
        for block, warps in CONFIGS:
            os.environ["LARK_CACHE_DIR"] = str(root / f"cache{block}")
            start = time.perf_counter()
            result = run_verify(task(root, block, warps), args.timeout)
            seconds = time.perf_counter() - start
            times.append(seconds)
            why = f": {result.reason}" if result.reason else ""
            print(f"BLOCK {block:6} num_warps {warps}  {seconds:8.1f} s  {result.verdict}{why}", flush=True)
    print(f"largest / smallest: {times[-1] / times[0]:.2f} (target at most 2)")


if __name__ == "__main__":
    main()
