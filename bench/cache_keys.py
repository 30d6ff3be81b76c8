"""What keying every cache by every input costs (issue 13): a compile-cache miss and hit, the batch resume
key of a CUDA task before its first compile (nvcc -M) and after (the entry's file list), the capture key,
and the source digests behind LARK's and the semantics version.

Prints best-of-N milliseconds. A benchmark, not a test: it asserts nothing; a hit should run no compiler
and cost milliseconds (it hashes every file nvcc read, the toolkit's headers included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.batch import task_key
from orchestrator.capture_cache import reference_inputs
from orchestrator.frontends import compile_kernel, kernel_inputs
from orchestrator.manifest import load_task
from semantics.version import source_digest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "relu_64x64"
OPTIONS = {"timeout_s": 600.0, "solver_s": None}


def best_ms(action: Callable[[], object], runs: int, before: Callable[[], object] = lambda: None) -> float:
    best = float("inf")
    for _ in range(runs):
        before()
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="lark-bench-") as tmp:
        os.environ["LARK_CACHE_DIR"] = str(Path(tmp) / "cache")
        task_dir = Path(tmp) / "relu"
        shutil.copytree(EXAMPLE, task_dir)
        manifest = task_dir / "lark.toml"
        spec = load_task(manifest).kernel
        ptx_cache = Path(tmp) / "cache" / "ptx"

        def clear() -> None:
            shutil.rmtree(ptx_cache, ignore_errors=True)

        inputs = len(kernel_inputs(spec)["inputs"])
        rows = [
            ("compile, miss (nvcc -ptx -MD)", best_ms(lambda: compile_kernel(spec), runs, clear)),
            ("resume key before a compile (nvcc -M)", best_ms(lambda: task_key(manifest, OPTIONS), runs, clear)),
            ("compile, hit (no compiler)", best_ms(lambda: compile_kernel(spec), runs)),
            ("resume key from the entry", best_ms(lambda: task_key(manifest, OPTIONS), runs)),
            ("capture key (ref.py folder tree)", best_ms(lambda: reference_inputs(task_dir / "ref.py"), runs)),
            ("source digest of LARK, uncached", best_ms(
                lambda: source_digest.__wrapped__(("orchestrator", "actors", "semantics", "lean_pool")), runs)),
        ]
    print(f"files nvcc read for {EXAMPLE.name}: {inputs}")
    for label, ms in rows:
        print(f"{label:42s} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
