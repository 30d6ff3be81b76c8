"""Where a `lark verify` of a small task spends its time when little or nothing is cached (issue 19, item 9).

Each run is a fresh `lark verify` process; its `[lark] STAGE ...` lines on stderr are timestamped as they
arrive, so each stage's seconds are the time to the next line (the first figure, to `intake`, is the
interpreter and LARK's imports). Three runs of the same task:

* fully cold: a fresh $LARK_CACHE_DIR (nvcc, the reference's capture subprocess, every obligation solved);
* reference captured: a fresh cache holding only the capture of the first run: what a code-generation
  farm sees for a new kernel of a known reference (no cached PTX or lemmas);
* warm: the first run's cache again.

Also the import time of the CLI alone and of the verifier's modules, and the capture and nvcc costs on
their own. A benchmark, not a test: it asserts nothing (DESIGN §9).
`python bench/cold_start.py [examples/relu_64x64/lark.toml]`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TASK = REPO / "examples" / "relu_64x64" / "lark.toml"
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
    args = parser.parse_args()
    task = args.task.resolve()
    with tempfile.TemporaryDirectory(prefix="lark-cold-start-") as tmp:
        scratch = Path(tmp)
        cold = timed_verify(task, scratch / "cold")
        shutil.copytree(scratch / "cold" / "ref", scratch / "captured" / "ref")
        captured = timed_verify(task, scratch / "captured")
        warm = timed_verify(task, scratch / "cold")
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


if __name__ == "__main__":
    main()
