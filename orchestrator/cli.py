"""`lark`: the command line of DESIGN §2.2."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from lean_pool.checker import Z3Checker
from orchestrator.manifest import IntakeError
from orchestrator.pipeline import prepare
from orchestrator.provers import bounds, inverse
from orchestrator.result import Result, error, from_report
from semantics.errors import Unsupported
from semantics.torch.capture import ReferenceError as ReferenceCaptureError
from semantics.verdict import Provers, verify

PROVERS = Provers(inverse=inverse.propose, bounds=bounds.candidates)


def run_verify(manifest: Path, timeout_s: float, progress=None) -> Result:
    """Verify one task; bad input becomes an `error` result rather than an exception."""
    start = time.monotonic()
    name = manifest.parent.name
    try:
        prepared = prepare(manifest)
        name = prepared.task.name
        report = verify(prepared.problem, Z3Checker(), PROVERS, timeout_s, progress)
    except (IntakeError, ReferenceCaptureError) as exc:
        return error(name, str(exc), time.monotonic() - start)
    except Unsupported as exc:
        return _unknown(name, f"unsupported: {exc}", start)
    except Exception as exc:  # noqa: BLE001 - a crash must never read as a verdict; it is unknown
        return _unknown(name, f"internal error: {type(exc).__name__}: {exc}", start)
    return from_report(name, report, time.monotonic() - start)


def _unknown(name: str, reason: str, start: float) -> Result:
    result = error(name, reason, time.monotonic() - start)
    result.verdict = "unknown"
    result.properties = {p: "unknown" for p in result.properties}
    return result


def _human(result: Result) -> str:
    lines = [f"{result.name}: {result.verdict}"]
    lines += [f"  {prop:20} {state}" for prop, state in result.properties.items()]
    lines += [f"  finding ({f['property']}): {f['message']}" for f in result.findings]
    if result.reason:
        lines.append(f"  reason: {result.reason}")
    if result.axioms:
        lines.append(f"  axioms used: {', '.join(result.axioms)}")
    lines.append(f"  {result.stats.get('obligations', 0)} obligations, {result.stats.get('wall_seconds', 0)} s")
    return "\n".join(lines)


@click.group()
@click.version_option(package_name="lark-verifier")
def main() -> None:
    """LARK: prove a GPU kernel computes what its PyTorch reference computes, or refute it with a witness."""


@main.command("verify")
@click.argument("task", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True,
              help="Overall time budget in seconds.")
def verify_command(task: Path, as_json: bool, timeout_s: float) -> None:
    """Verify the task described by TASK (a lark.toml). Exit 0 verified, 1 refuted, 2 unknown, 3 error."""
    def progress(stage: str) -> None:
        if not as_json:
            click.echo(f"[lark] {stage} ...", err=True)

    result = run_verify(task, timeout_s, progress)
    click.echo(json.dumps(result.to_json(), indent=None if as_json else 2) if as_json else _human(result))
    sys.exit(result.exit_status)
