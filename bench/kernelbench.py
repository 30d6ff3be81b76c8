"""KernelBench level 1 (examples/kernelbench_l1/): verify every problem cold, one `lark verify` subprocess
each with a fresh LARK_CACHE_DIR and a per-task timeout, and print the verified count, the unknowns
grouped by reason, the refuted ones, each task whose verdict differs from its EXPECT, and the median and
max seconds. Prints figures; asserts nothing."""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

SUITE = Path(__file__).resolve().parent.parent / "examples" / "kernelbench_l1"
REPO = SUITE.parent.parent
GRACE_S = 30.0          # beyond --timeout: the capture sandbox and process start-up


@dataclass(frozen=True)
class Outcome:
    task: str
    verdict: str        # verified / refuted / unknown / error / timeout
    reason: str
    seconds: float
    expect: str


def problem_number(path: Path) -> int:
    head = path.name.split("_", 1)[0]
    return int(head) if head.isdigit() else 10_000


def read_expect(task: Path) -> str:
    return (task / "EXPECT").read_text().strip() if (task / "EXPECT").exists() else ""


def run_one(task: Path, timeout_s: float) -> Outcome:
    """`lark verify --json` cold: its own empty cache directory, so nothing is served from another run."""
    expect = read_expect(task)
    with tempfile.TemporaryDirectory(prefix="lark-kb-") as cache:
        command = [sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                   str(task / "lark.toml"), "--json", "--timeout", str(timeout_s)]
        env = {**os.environ, "LARK_CACHE_DIR": cache, "PYTHONPATH": str(REPO)}
        start = time.perf_counter()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s + GRACE_S)
        except subprocess.TimeoutExpired:
            return Outcome(task.name, "timeout", f"over {timeout_s + GRACE_S:.0f} s", time.perf_counter() - start,
                           expect)
        seconds = time.perf_counter() - start
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Outcome(task.name, "error", tail[:200], seconds, expect)
    return Outcome(task.name, result.get("verdict", "error"), str(result.get("reason") or ""), seconds, expect)


BUDGET = re.compile(r"^(wall|solver)-time budget of [\d.]+ s exhausted: ")


def reason_key(outcome: Outcome) -> str:
    """What an unknown is grouped under: what stopped it, without line numbers, registers or the budget's
    size (an exhausted budget is grouped by what was still open when it ran out)."""
    reason = outcome.reason
    budget = BUDGET.match(reason)
    rest = reason[budget.end():] if budget else reason
    rest = re.split(r" \(line | at line |; |\[kernel", rest)[0]
    rest = re.sub(r"%\w+|\d+", "N", rest)
    key = ("budget: " if budget else "") + rest.strip()
    return key[:110] or "(no reason)"


def twins(tasks: list[str]) -> set[str]:
    """The twins: a folder sharing its problem number with a shorter-named one (the problem's own); those
    not expected to verify are the buggy ones."""
    by_number: dict[str, list[str]] = defaultdict(list)
    for t in tasks:
        by_number[t.split("_", 1)[0]].append(t)
    return {t for names in by_number.values() for t in names if t != min(names, key=len)}


def agrees(outcome: Outcome) -> bool:
    verdict, _, detail = outcome.expect.partition(" ")
    if verdict != outcome.verdict:
        return False
    return verdict != "unknown" or detail in outcome.reason


def report(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        print(f"{o.task:40s} {o.verdict:9s} {o.seconds:7.1f} s  {o.reason[:110]}")
    twin = twins([o.task for o in outcomes])
    buggy = twin - {o.task for o in outcomes if o.expect.startswith("verified")}
    problems = [o for o in outcomes if o.task not in twin]
    verified = [o for o in problems if o.verdict == "verified"]
    print(f"\nproblems: verified {len(verified)} / {len(problems)}")
    groups: dict[str, list[str]] = defaultdict(list)
    for o in problems:
        if o.verdict != "verified":
            groups[f"{o.verdict}: {reason_key(o)}"].append(o.task.split("_", 1)[0])
    for key, tasks in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(tasks):3d}  {key}  [{', '.join(tasks)}]")
    refuted = [o.task for o in outcomes if o.task in buggy and o.verdict == "refuted"]
    print(f"buggy twins: refuted {len(refuted)} / {len(buggy)} [{', '.join(refuted)}]")
    seconds = [o.seconds for o in problems]
    if seconds:
        print(f"seconds (problems): median {statistics.median(seconds):.1f}, max {max(seconds):.1f}"
              f" ({max(problems, key=lambda o: o.seconds).task}), total {sum(seconds):.0f}")
    mismatched = [o for o in outcomes if not agrees(o)]
    for o in mismatched:
        print(f"EXPECT differs: {o.task}: expected '{o.expect}', got {o.verdict} ({o.reason[:80]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=float, default=300.0, help="per-task --timeout of lark verify (s)")
    parser.add_argument("--only", nargs="*", default=[], help="task folder names (or their number prefixes)")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    parser.add_argument("--report", type=Path, nargs="+", default=[],
                        help="run nothing: print the figures of earlier --json files (a later file's outcome "
                             "of a task replaces an earlier one's)")
    args = parser.parse_args()
    if args.report:
        merged = {o["task"]: Outcome(**{**o, "expect": read_expect(SUITE / o["task"])})
                  for path in args.report for o in json.loads(path.read_text()) if (SUITE / o["task"]).is_dir()}
        report(sorted(merged.values(), key=lambda o: (problem_number(SUITE / o.task), o.task)))
        return
    tasks = sorted((p.parent for p in SUITE.glob("*/lark.toml")), key=lambda p: (problem_number(p), p.name))
    if args.only:
        tasks = [t for t in tasks if t.name in args.only or t.name.split("_", 1)[0] in args.only]
    outcomes = []
    for task in tasks:
        outcomes.append(run_one(task, args.timeout))
        o = outcomes[-1]
        print(f"  ... {o.task}: {o.verdict} {o.seconds:.1f} s  {o.reason[:100]}", file=sys.stderr, flush=True)
        if args.json:   # after every task, so an interrupted run keeps what it measured
            args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    report(outcomes)


if __name__ == "__main__":
    main()
