"""A bounded load test of `lark serve` on loopback: throughput and p50/p99 latency on easy kernels, warm.

Starts a server in this process (127.0.0.1, a free port, a fresh job database), warms it (each kernel once:
worker processes started, PTX compiled, references captured, lemmas cached), then sends a fixed number of
submissions from a fixed number of client threads and stops. Each measured submission is a new job (its
task name differs, so no earlier job answers it): a real verification on a warm server. Then the same
number of duplicate submissions, which the finished jobs answer without verifying.

    PYTHONPATH=$PWD python bench/server_load.py [--requests 40] [--concurrency 4] [--workers 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.client import read_task  # noqa: E402
from orchestrator.server import pb, pb_grpc, serve  # noqa: E402

EASY = ["relu_64x64", "ptx_copy", "leaky_relu_const", "float4_relu", "bias_add_broadcast_2d"]
DEADLINE_S = 600.0


def one(stub, task, name: str) -> tuple[float, str, bool]:
    """Submit `task` under `name` and follow it to the verdict: (seconds, verdict, answered as a duplicate)."""
    task = pb.Task(name=name, manifest=task.manifest, files=dict(task.files))
    start = time.perf_counter()
    stream = list(stub.Submit(pb.SubmitRequest(task=task), timeout=DEADLINE_S))
    return time.perf_counter() - start, stream[-1].verdict.verdict, stream[0].queued.duplicate


def phase(stub, tasks: dict, names: list[tuple[str, str]], concurrency: int) -> tuple[float, list]:
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(lambda pair: one(stub, tasks[pair[0]], pair[1]), names))
    return time.perf_counter() - start, answers


def show(label: str, wall: float, answers: list) -> None:
    latencies = sorted(a[0] for a in answers)
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    verdicts = {v: sum(a[1] == v for a in answers) for v in sorted({a[1] for a in answers})}
    print(f"{label:10} {len(answers)} requests in {wall:.2f} s: {len(answers) / wall:.2f} req/s, "
          f"p50 {statistics.median(latencies) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
          f"duplicates {sum(a[2] for a in answers)}, verdicts {verdicts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    tasks = {name: read_task(REPO / "examples" / name) for name in EASY}
    with tempfile.TemporaryDirectory(prefix="lark-load-") as root:
        running = serve("127.0.0.1", 0, args.workers, Path(root) / "jobs.db")
        try:
            with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
                stub = pb_grpc.LarkStub(channel)
                show("warm-up", *phase(stub, tasks, [(n, f"warm-{n}-{k}") for n in EASY for k in range(args.workers)],
                                       args.workers))
                names = [(EASY[i % len(EASY)], f"load-{i}") for i in range(args.requests)]
                show("verify", *phase(stub, tasks, names, args.concurrency))
                show("duplicate", *phase(stub, tasks, names, args.concurrency))
        finally:
            running.stop()


if __name__ == "__main__":
    main()
