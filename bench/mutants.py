"""Mutants of the correct examples: how many LARK refutes, leaves unknown, or wrongly verifies (must be 0).

Each correct example (EXPECT `verified`) is mutated by the operators of bench/mutation/operators.py; a
mutant is kept only when the concrete interpreter shows it to differ from its example (filter.decide);
`lark verify --json` then runs on every kept mutant. A kept mutant that verifies is a soundness bug and is
printed with its diff. With --verify-undecided, mutants the filter could not settle are verified too and
their `verified` answers listed for a person to judge (they are not counted as wrong).

    PYTHONPATH=$PWD python bench/mutants.py --examples relu_64x64 shared_block_sum --jobs 2 --limit 100
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import zip_longest
from pathlib import Path

from bench.mutation.concrete_run import Outcome, outcome
from bench.mutation.decision import Decision
from bench.mutation.filter import decide
from bench.mutation.generate import EXAMPLES, Mutant, correct_examples, generate
from bench.mutation.operators import OPERATORS
from bench.mutation.verdicts import lark_verify
from orchestrator.pipeline import Prepared, prepare

VERDICTS = ("refuted", "unknown", "error", "verified")
NARROWING_REASON = "a narrowing"


def interleaved(mutants: list[Mutant]) -> list[Mutant]:
    """Round-robin over (example, operator) groups, so that --limit still samples every group."""
    groups: dict[tuple[str, str], list[Mutant]] = {}
    for m in mutants:
        groups.setdefault((m.example, m.operator), []).append(m)
    return [m for row in zip_longest(*groups.values()) for m in row if m is not None]


class Originals:
    """Each example prepared once and run concretely once: every mutant of it compares to the same run."""

    def __init__(self) -> None:
        self.prepared: dict[str, Prepared] = {}
        self.outcomes: dict[str, Outcome] = {}

    def decide(self, mutant: Mutant) -> Decision:
        if mutant.example not in self.prepared:
            self.prepared[mutant.example] = prepare(EXAMPLES / mutant.example / "lark.toml")
            self.outcomes[mutant.example] = outcome(self.prepared[mutant.example].problem, whole_blocks=True)
        return decide(self.prepared[mutant.example], mutant.manifest, self.outcomes[mutant.example])


def earlier_verdicts(path: Path | None) -> dict[tuple[str, str], dict]:
    """Verdicts of an earlier run's --results file, by (mutant name, diff): a mutant the same as then need
    not be verified again when only the filter has changed."""
    if path is None or not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["name"], r["diff"]): r for r in rows if r.get("verdict") and r["verdict"] != "error"}


def verify_later(mutant: Mutant, timeout_s: float, earlier: dict[tuple[str, str], dict]) -> dict:
    known = earlier.get((mutant.name, mutant.diff))
    if known is not None:
        return {"verdict": known["verdict"], "reason": known.get("reason"), "properties": known.get("properties"),
                "stats": {"wall_seconds": known.get("wall_s")}}
    return lark_verify(mutant.manifest, timeout_s)


def run(mutants: list[Mutant], jobs: int, timeout_s: float, verify_undecided: bool, log,
        earlier: dict[tuple[str, str], dict]) -> list[dict]:
    """Decide every mutant (in this process) and verify the kept ones (in `jobs` processes at once); each
    row is logged as soon as it is complete."""
    originals, rows = Originals(), []

    def verified(row: dict, result: dict) -> None:
        row.update(verdict=result["verdict"], reason=result.get("reason"),
                   properties=result.get("properties"), wall_s=(result.get("stats") or {}).get("wall_seconds"))
        log(row)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for mutant in mutants:
            decision = originals.decide(mutant)
            row = {**mutant.to_json(), "decision": decision.kind, "decision_reason": decision.reason}
            rows.append(row)
            if decision.kind == "differs" or (verify_undecided and decision.kind == "undecided"):
                future = pool.submit(verify_later, mutant, timeout_s, earlier)
                future.add_done_callback(lambda f, row=row: verified(row, f.result()))
            else:
                log(row)
    return rows


def summary(rows: list[dict]) -> tuple[str, list[dict]]:
    decisions = Counter(r["decision"] for r in rows)
    kept = [r for r in rows if r["decision"] == "differs"]
    verdicts = Counter(r.get("verdict") for r in kept)
    wrong = [r for r in kept if r.get("verdict") == "verified"]
    by_contract = [r for r in kept if r["decision_reason"].startswith(NARROWING_REASON)]
    lines = [f"generated          {len(rows)}",
             f"not compiled       {decisions['not_compiled']}",
             f"same (equivalent)  {decisions['same']}",
             f"undecided          {decisions['undecided']}",
             f"kept (differ)      {len(kept)}  ({len(kept) - len(by_contract)} shown by the interpreter, "
             f"{len(by_contract)} narrowing by contract)"]
    lines += [f"  {v:16} {verdicts[v]}" for v in VERDICTS[:-1]]
    wrong_contract = sum(r in by_contract for r in wrong)
    lines.append(f"  wrongly verified {len(wrong)}  ({len(wrong) - wrong_contract} shown by the interpreter, "
                 f"{wrong_contract} narrowing)")
    by_operator = Counter((r["operator"], r.get("verdict")) for r in kept)
    lines.append("kept by operator: " + ", ".join(
        f"{op} {sum(n for (o, _), n in by_operator.items() if o == op)}"
        f" (refuted {by_operator[(op, 'refuted')]}, unknown {by_operator[(op, 'unknown')]})" for op in OPERATORS))
    return "\n".join(lines), wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", nargs="*", help="example folder names (default: every correct one)")
    parser.add_argument("--operators", nargs="*", choices=sorted(OPERATORS), help="default: all")
    parser.add_argument("--limit", type=int, default=None, help="at most this many mutants (sampled round-robin)")
    parser.add_argument("--jobs", type=int, default=1, help="lark verify processes at once")
    parser.add_argument("--timeout", type=float, default=120.0, help="lark verify --timeout per mutant")
    parser.add_argument("--verify-undecided", action="store_true", help="also verify what the filter left open")
    parser.add_argument("--out", type=Path, default=None, help="keep the mutant folders here (default: a temp dir)")
    parser.add_argument("--results", type=Path, default=None, help="write one JSON line per mutant here")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="take verdicts from this earlier --results file for mutants unchanged since")
    args = parser.parse_args()

    examples = [EXAMPLES / name for name in args.examples] if args.examples else correct_examples()
    out = args.out or Path(tempfile.mkdtemp(prefix="lark-mutants-"))
    out.mkdir(parents=True, exist_ok=True)
    mutants = interleaved(generate(examples, args.operators, out))[:args.limit]
    earlier = earlier_verdicts(args.reuse)
    results = args.results.open("w") if args.results else None

    lock = threading.Lock()

    def log(row: dict) -> None:
        with lock:
            write(row)

    def write(row: dict) -> None:
        verdict = row.get("verdict", "-")
        print(f"{row['name']:60} {row['decision']:12} {verdict:9} {row['decision_reason'][:70]}", flush=True)
        if results:
            results.write(json.dumps(row) + "\n")
            results.flush()

    start = time.monotonic()
    rows = run(mutants, args.jobs, args.timeout, args.verify_undecided, log, earlier)
    text, wrong = summary(rows)
    print(f"\n{text}\n{time.monotonic() - start:.0f} s; mutant folders in {out}")
    open_verified = [r for r in rows if r["decision"] == "undecided" and r.get("verdict") == "verified"]
    for r in open_verified:
        print(f"verified, filter undecided (judge by hand): {r['name']} ({r['decision_reason']})\n{r['diff']}")
    for r in wrong:
        print(f"\n!!! WRONGLY VERIFIED: {r['name']} (operator {r['operator']}, {r['example']} line {r['line']})\n"
              f"    the interpreter shows: {r['decision_reason']}\n{r['diff']}", file=sys.stderr)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
