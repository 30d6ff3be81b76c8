"""Where a `lark verify` of a small task spends its time when little or nothing is cached (issue 19, item 9).

Each run is a fresh `lark verify` process; its `[lark] STAGE ...` lines on stderr are timestamped as they
arrive, so each stage's seconds are the time to the next line (the first figure, to `intake`, is the
interpreter and LARK's imports). Three runs of the same task:

* fully cold: a fresh $LARK_CACHE_DIR (nvcc, the reference's capture subprocess, every obligation solved);
* reference captured: a fresh cache holding only the capture of the first run: what a code-generation
  farm sees for a new kernel of a known reference (no cached PTX or lemmas);
* warm: the first run's cache again.

Also the import time of the CLI alone and of the verifier's modules, and the capture and nvcc costs on
their own. Then the same first two runs through `lark serve`, as a code-generation farm sends kernels: each
a fresh server process on its own fresh cache (the second holding only the capture), warmed by one job of
another task (`--warm-up`), so that its worker and the worker's warm capture worker are running; the figure
is the submitted task's time from submission to verdict. A benchmark, not a test: it asserts nothing
(DESIGN §9). `python bench/cold_start.py [examples/relu_64x64/lark.toml]`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TASK = REPO / "examples" / "relu_64x64" / "lark.toml"
DEFAULT_WARM_UP = REPO / "examples" / "bias_add_broadcast_2d"
STAGE = re.compile(r"^\[lark\] (?P<stage>.+) \.\.\.$")


def environment(cache: Path) -> dict[str, str]:
    return {**os.environ, "LARK_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}


def timed_verify(task: Path, cache: Path) -> tuple[float, list[tuple[str, float]], str]:
    """(total seconds, [(stage, seconds)], verdict line) of one `lark verify TASK` process."""
    command = [sys.executable, "-c", "from orchestrator.cli import main; main()", "verify", str(task)]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=environment(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    marks = [("start-up and imports", start)]
    for line in proc.stderr:
        match = STAGE.match(line.strip())
        if match:
            marks.append((match.group("stage"), time.perf_counter()))
    out = proc.stdout.read()
    proc.wait()
    end = time.perf_counter()
    stages = [(name, (marks[i + 1][1] if i + 1 < len(marks) else end) - at) for i, (name, at) in enumerate(marks)]
    return end - start, stages, out.splitlines()[0] if out else f"exit {proc.returncode}"


def timed_served(task: Path, cache: Path, warm_up: Path) -> tuple[float, str]:
    """(seconds from submission to verdict, verdict line) of `task` sent to a fresh `lark serve` on `cache`,
    after one job of `warm_up` (the server's worker process and its capture worker are then warm)."""
    from orchestrator.client import read_task, submit

    command = [sys.executable, "-c", "from orchestrator.cli import main; main()", "serve", "--port", "0",
               "--db", str(cache / "jobs.db")]
    server = subprocess.Popen(command, env=environment(cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, cwd=REPO)
    try:
        address = "127.0.0.1:" + re.search(r"listening on [^:]+:(\d+)", server.stderr.readline()).group(1)
        threading.Thread(target=server.stderr.read, daemon=True).start()     # never let its stderr fill up
        submit(address, read_task(warm_up), wait=True)
        time.sleep(1.0)                      # the warm-up's last writes settle
        start = time.perf_counter()
        result = submit(address, read_task(task), wait=True).result
        return time.perf_counter() - start, f"{result.name}: {result.verdict}"
    finally:
        server.terminate()
        server.wait(30)


def timed_python(code: str, cache: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=environment(cache), check=True, cwd=REPO)
    return time.perf_counter() - start


def report(label: str, run: tuple[float, list[tuple[str, float]], str]) -> None:
    total, stages, verdict = run
    print(f"{label:24} {total:6.2f} s   {verdict}")
    for stage, seconds in stages:
        print(f"    {stage:36} {seconds:6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", nargs="?", type=Path, default=DEFAULT_TASK)
    parser.add_argument("--warm-up", type=Path, default=DEFAULT_WARM_UP,
                        help="the task a server verifies first (another kernel and reference)")
    args = parser.parse_args()
    task = args.task.resolve()
    with tempfile.TemporaryDirectory(prefix="lark-cold-start-") as tmp:
        scratch = Path(tmp)
        cold = timed_verify(task, scratch / "cold")
        shutil.copytree(scratch / "cold" / "ref", scratch / "captured" / "ref")
        captured = timed_verify(task, scratch / "captured")
        warm = timed_verify(task, scratch / "cold")
        served_cold = timed_served(task, scratch / "served-cold", args.warm_up.resolve())
        shutil.copytree(scratch / "cold" / "ref", scratch / "served-captured" / "ref")
        served_captured = timed_served(task, scratch / "served-captured", args.warm_up.resolve())
        imports = {
            "python alone": timed_python("pass", scratch / "x"),
            "import orchestrator.cli": timed_python("import orchestrator.cli", scratch / "x"),
            "import orchestrator.job": timed_python("import orchestrator.job", scratch / "x"),
            "import torch (the capture's)": timed_python("import torch", scratch / "x"),
        }
    print(f"lark verify {task.relative_to(REPO) if task.is_relative_to(REPO) else task}, one fresh process each")
    report("fully cold", cold)
    report("reference captured", captured)
    report("warm", warm)
    for label, seconds in imports.items():
        print(f"{label:32} {seconds:6.2f} s (a fresh process)")
    print(f"lark serve, a fresh server per run, warmed by one job of {args.warm_up.name}")
    for label, (seconds, verdict) in (("fully cold", served_cold), ("reference captured", served_captured)):
        print(f"{label:24} {seconds:6.2f} s   {verdict}")


if __name__ == "__main__":
    main()
