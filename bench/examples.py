"""Every example of examples/ (the ones CI leaves to this benchmark too, examples/bench_only.txt): `lark verify
--json` on each, its verdict against EXPECT, and the seconds it took. Prints one line per example and a
summary; exits 1 if any verdict differs from its EXPECT.

    python bench/examples.py [--only NAME ...] [--timeout S]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(manifest: Path, timeout_s: float) -> tuple[str, str, float]:
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                               str(manifest), "--json", "--timeout", str(timeout_s)],
                              capture_output=True, text=True, timeout=timeout_s + 120)
        result = json.loads(proc.stdout)
        verdict = result["verdict"]
        detail = ",".join(p for p, s in result["properties"].items() if s == "violated") or (result["reason"] or "")
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        verdict, detail = "error", type(exc).__name__
    return verdict, detail[:80], time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    manifests = sorted(EXAMPLES.glob("*/lark.toml"))
    if args.only:
        manifests = [m for m in manifests if m.parent.name in args.only]
    wrong, seconds = [], []
    for manifest in manifests:
        expected = (manifest.parent / "EXPECT").read_text().split()[0]
        verdict, detail, took = run(manifest, args.timeout)
        seconds.append(took)
        mark = "ok " if verdict == expected else "BAD"
        if verdict != expected:
            wrong.append(manifest.parent.name)
        print(f"{mark} {manifest.parent.name:45} expect {expected:9} got {verdict:9} {took:7.1f} s  {detail}",
              flush=True)
    seconds.sort()
    print(f"{len(manifests)} examples, {len(wrong)} not as expected {wrong}; median {seconds[len(seconds) // 2]:.1f} s,"
          f" max {seconds[-1]:.1f} s, total {sum(seconds):.0f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
