"""Certificates of verified examples: `lark verify --certificate` on each, then `lark check --solver S` of what it
wrote, each in a fresh process with a fresh cache, and the seconds each took (the check re-compiles the kernel and
re-captures the reference, replays the proof through the kernel and re-derives the goals; it runs no search).

    python bench/certificates.py [--only NAME ...] [--solver z3|cvc5|both] [--timeout S]

Prints one line per example (verdict, certificate written or why not, check outcome, verify and check seconds,
their ratio, proof nodes, certificate size) and exits 1 if any verified example's certificate is missing or does
not hold. Examples whose EXPECT is not `verified` are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _lark(*args: str, timeout_s: float, cache: str) -> tuple[subprocess.CompletedProcess | None, float]:
    start = time.monotonic()
    env = {**os.environ, "LARK_CACHE_DIR": cache}
    try:
        proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", *args],
                              capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        proc = None
    return proc, time.monotonic() - start


def run(manifest: Path, solver: str, timeout_s: float, folder: Path) -> tuple[bool, str]:
    cert = folder / f"{manifest.parent.name}.json"
    with tempfile.TemporaryDirectory(prefix="lark-bench-cache-") as cache:
        verify, verify_s = _lark("verify", str(manifest), "--json", "--certificate", str(cert),
                                 "--timeout", str(timeout_s), timeout_s=timeout_s + 120, cache=cache)
    try:
        result = json.loads(verify.stdout) if verify else {"verdict": "timeout", "reason": None}
    except json.JSONDecodeError:
        result = {"verdict": "error", "reason": (verify.stderr or "")[-200:]}
    if not cert.exists():
        return False, f"{result['verdict']:9} verify {verify_s:7.1f} s  no certificate: {result.get('reason')}"
    with tempfile.TemporaryDirectory(prefix="lark-bench-cache-") as cache:
        check, check_s = _lark("check", str(cert), "--solver", solver, timeout_s=timeout_s + 120, cache=cache)
    held = check is not None and check.returncode == 0
    said = "timeout" if check is None else (check.stdout + check.stderr).strip().splitlines()
    proof = json.loads(cert.read_text())["proof"]
    size = cert.stat().st_size / 1e6
    line = (f"{result['verdict']:9} verify {verify_s:7.1f} s  check {check_s:7.1f} s  ratio {check_s / verify_s:5.2f}"
            f"  {len(proof['nodes']):5} nodes  {size:6.2f} MB  {'holds' if held else 'REJECTED'}")
    return held, line if held else f"{line}\n    {' | '.join(said[:4]) if isinstance(said, list) else said}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--solver", default="both", choices=("z3", "cvc5", "both"))
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--keep", type=Path, default=None, help="write the certificates into this folder")
    args = parser.parse_args()
    manifests = [m for m in sorted(EXAMPLES.glob("*/lark.toml"))
                 if (m.parent / "EXPECT").read_text().startswith("verified")
                 and (not args.only or m.parent.name in args.only)]
    failed = []
    with tempfile.TemporaryDirectory(prefix="lark-bench-certs-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for manifest in manifests:
            held, line = run(manifest, args.solver, args.timeout, folder)
            if not held:
                failed.append(manifest.parent.name)
            print(f"{'ok ' if held else 'BAD'} {manifest.parent.name:36} {line}", flush=True)
    print(f"{len(manifests)} verified examples, {len(failed)} without a certificate that holds: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
