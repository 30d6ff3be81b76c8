"""`lark`: the command line of DESIGN §2.2."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import click

from lean_pool.budget import Budget
from lean_pool.cache import DiskLemmaStore
from lean_pool.checker import Checker, Z3Checker
from lean_pool.stack import assemble
from orchestrator.batch import batch_and_report, verify_on_ray
from orchestrator.cert_check import SOLVERS, run_check
from orchestrator.certificate import NoCertificate, write_certificate, write_witness
from orchestrator.manifest import IntakeError
from orchestrator.pipeline import prepare
from orchestrator.provers import bounds, inverse, reindex
from orchestrator.report import exit_status
from orchestrator.result import Result, error, from_report, shown_state
from orchestrator.search import ProverStrategy, Search, Strategy
from orchestrator.telemetry import Stages, TracingChecker, span
from semantics.errors import Unsupported
from semantics.torch.capture import ReferenceError as ReferenceCaptureError
from semantics.verdict import Provers, verify

PROVERS = Provers(inverse=inverse.propose, bounds=bounds.candidates, reindex=reindex.propose, split=inverse.split)
STRATEGIES: dict[str, list[Strategy]] = {"bounds": [ProverStrategy("bounds", bounds.candidates)],
                                         "reindex": [ProverStrategy("reindex", reindex.candidates)]}
SEARCH_WIDTH = 2     # obligations a local search checks at once (in-process z3 solves outside the GIL)


def run_verify(manifest: Path, timeout_s: float, progress=None, certificate: Path | None = None,
               witness: Path | None = None, checker: Checker | None = None, budget: Budget | None = None,
               search_width: int = SEARCH_WIDTH, solver_s: float | None = None,
               allow_narrowing: bool = False) -> Result:
    """Verify one task; bad input becomes an `error` result rather than an exception. A verified task writes
    its certificate to `certificate`, a refuted one its witness to `witness`, when asked. `checker` defaults
    to the embedded local one (z3 in-process, the lemma cache, a budget of `timeout_s` wall seconds and
    `solver_s` solver seconds); a caller that passes a checker passes the `budget` it charges, which the
    search obeys too."""
    start = time.monotonic()
    name = manifest.parent.name
    if checker is None:
        budget = Budget(wall_s=timeout_s, solver_s=solver_s)
        checker = assemble(Z3Checker(), DiskLemmaStore(), budget)
    budget = budget or Budget(wall_s=timeout_s, solver_s=solver_s)
    checker = TracingChecker(checker)
    stages = Stages(progress)
    with span("lark.job", {"lark.manifest": str(manifest)}) as job, \
            Search(checker, STRATEGIES, budget, search_width) as search:
        try:
            prepared = prepare(manifest, allow_narrowing)
            name = prepared.task.name
            report = verify(prepared.problem, checker, replace(PROVERS, search=search.hook), timeout_s, stages)
        except (IntakeError, ReferenceCaptureError) as exc:
            return error(name, str(exc), time.monotonic() - start)
        except Unsupported as exc:
            return _unknown(name, f"unsupported: {exc}", start)
        except Exception as exc:  # noqa: BLE001 - a crash must never read as a verdict; it is unknown
            return _unknown(name, f"internal error: {type(exc).__name__}: {exc}", start)
        finally:
            stages.close()
        result = from_report(name, report, time.monotonic() - start)
        result.stats["search"] = search.stats.to_json()
        stop = budget.stop_reason()
        if result.verdict == "unknown" and stop is not None:   # name the budget that left the job open
            result.reason = f"{stop}: {result.reason}"
        job.set_attributes({"lark.task": name, "lark.verdict": result.verdict,
                            **{f"lark.property.{p}": state for p, state in result.properties.items()}})
    if certificate is not None and result.verdict == "verified":
        try:
            result.certificate = str(write_certificate(certificate, manifest, prepared, report))
        except (NoCertificate, OSError) as exc:
            result.reason = f"certificate not written: {exc}"
    if witness is not None and result.verdict == "refuted":
        try:
            write_witness(witness, manifest, prepared, report)
        except (NoCertificate, OSError) as exc:
            result.reason = f"witness not written: {exc}"
    return result


def _unknown(name: str, reason: str, start: float) -> Result:
    result = error(name, reason, time.monotonic() - start)
    result.verdict = "unknown"
    result.properties = {p: "unknown" for p in result.properties}
    return result


def _human(result: Result) -> str:
    lines = [f"{result.name}: {result.verdict}"]
    lines += [f"  {prop:20} {shown_state(prop, state)}" for prop, state in result.properties.items()]
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
@click.option("--certificate", "certificate", type=click.Path(path_type=Path), default=None,
              help="If verified, write the certificate here (re-check it with `lark check`).")
@click.option("--witness", "witness", type=click.Path(path_type=Path), default=None,
              help="If refuted, write the findings and their witnesses here (replay them with `lark check`).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Check obligations on N pooled checker workers of a Ray fleet (a local Ray instance).")
@click.option("--address", default=None, help="Join this Ray cluster (default: $RAY_ADDRESS) instead.")
@click.option("--solver-seconds", "solver_s", type=float, default=None,
              help="Solver-time budget in seconds (summed over obligations); once spent, the rest is unknown.")
@click.option("--allow-narrowing", is_flag=True,
              help="Take float conversions narrower than the reference's dtype (f32 to f16/bf16) as the identity "
                   "on reals, each listed as axiom float.narrowing@line N (default: unknown).")
def verify_command(task: Path, as_json: bool, timeout_s: float, certificate: Path | None,
                   witness: Path | None, workers: int | None, address: str | None, solver_s: float | None,
                   allow_narrowing: bool) -> None:
    """Verify the task described by TASK (a lark.toml, or a folder holding one). Exit 0 verified, 1 refuted,
    2 unknown, 3 error."""
    if task.is_dir() and (task / "lark.toml").is_file():
        task = task / "lark.toml"

    def progress(stage: str) -> None:
        if not as_json:
            click.echo(f"[lark] {stage} ...", err=True)

    if workers or address:
        if allow_narrowing:
            raise click.UsageError("--allow-narrowing is not supported with --workers/--address yet")
        result = verify_on_ray(task, timeout_s, workers, address, certificate, witness, solver_s)
    else:
        result = run_verify(task, timeout_s, progress, certificate, witness, solver_s=solver_s,
                            allow_narrowing=allow_narrowing)
    click.echo(json.dumps(result.to_json(), indent=None if as_json else 2) if as_json else _human(result))
    sys.exit(result.exit_status)


@main.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--solver", type=click.Choice(sorted(SOLVERS)), default="z3", show_default=True,
              help="Which solver(s) re-prove a certificate's obligations.")
def check_command(file: Path, solver: str) -> None:
    """Re-check a certificate, or replay a witness, written by `lark verify`. Exit 0 if it holds, 1 if it
    does not (the message says what no longer matches), 3 if FILE is not a readable certificate or witness."""
    status, text = run_check(file, solver)
    click.echo(text, err=status != 0)
    sys.exit(status)


@main.command("batch")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Verify actors to run (default: the CPUs of the local machine or of the cluster).")
@click.option("--address", default=None, help="Join this Ray cluster (default: $RAY_ADDRESS; else start one).")
@click.option("--report", type=click.Path(path_type=Path), default=None, help="Write an HTML report here.")
@click.option("--junit", type=click.Path(path_type=Path), default=None, help="Write JUnit XML here.")
@click.option("--state", type=click.Path(path_type=Path), default=None,
              help="Results file that makes a rerun skip finished tasks (default: beside --report or --junit, "
                   "else .lark/batch-state.jsonl).")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True,
              help="Wall-time budget of each task in seconds.")
@click.option("--solver-seconds", "solver_s", type=float, default=None,
              help="Solver-time budget of each task in seconds (default: no limit beyond --timeout).")
def batch_command(source: Path, workers: int | None, address: str | None, report: Path | None, junit: Path | None,
                  state: Path | None, timeout_s: float, solver_s: float | None) -> None:
    """Verify every lark.toml under SOURCE (a directory), or each manifest listed in SOURCE (a file).
    Exit 0 if no task is refuted or error (unknown allowed), 1 if some task is refuted, 3 if some is error."""
    outcomes = batch_and_report(source, workers, address, report, junit, state, timeout_s, solver_s)
    for o in outcomes:
        click.echo(f"{o.result.verdict:9} {o.result.name}{'  (resumed)' if o.resumed else ''}")
    sys.exit(exit_status([o.result for o in outcomes]))
