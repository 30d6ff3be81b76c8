"""Speed of the concrete interpreter (semantics/concrete): instructions per second on KernelBench-sized rows.

Runs one block of the shared-memory row sum (`examples/shared_block_sum_short_tree`: 256 threads, a strided
loop over the row, a tree through shared memory) at several row lengths, and one warp-shuffle row sum, and
prints instructions executed, seconds and instructions/second. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orchestrator.pipeline import prepare
from semantics.concrete import SparseBuffer, run_blocks
from semantics.ptx.machine import Buffer, Launch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def row(example: str, cols: int) -> tuple[int, float]:
    problem = prepare(EXAMPLES / example / "lark.toml").problem
    rows = problem.buffers["y"].numel
    x = Buffer("x", "float32", rows * cols, 4, "input")
    args = [x if getattr(a, "name", None) == "x" else a for a in problem.args[:-1]] + [cols]   # (rows..., cols)
    buffers = {**{n: SparseBuffer(b) for n, b in problem.buffers.items()}, "x": SparseBuffer(x, {5: 2.0}, 1.0)}
    launch = Launch(problem.launch.grid, problem.launch.block, problem.launch.dynamic_shared_bytes)
    start = time.perf_counter()
    result = run_blocks(problem.kernel, launch, args, buffers, [(1, 0, 0)], record=False)
    return result.steps, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cols", type=int, nargs="*", default=[4096, 32768, 393216])
    args = parser.parse_args()
    for example in ("shared_block_sum_short_tree", "warp_rowsum_shfl"):
        for cols in args.cols:
            steps, seconds = row(example, cols)
            print(f"{example:32s} cols={cols:7d}  {steps:10d} instructions  {seconds:7.2f} s  "
                  f"{steps / seconds:10.0f} instructions/s")


if __name__ == "__main__":
    main()
