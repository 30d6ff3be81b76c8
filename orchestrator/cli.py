"""`lark`: the command line of DESIGN §2.2."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import click

from orchestrator.cert_schema import SOLVERS
from orchestrator.explain import document_notes, human
from orchestrator.report import FAIL_ON, batch_exit_status
from orchestrator.show import STAGES as SHOW_STAGES
from orchestrator.show import render

# Each command imports what only it needs inside its function: `lark batch` answered from stored results
# needs neither the verifier (z3 terms, the PTX parser) nor Ray, and `lark verify` needs no Ray or gRPC.

POSITIVE = click.FloatRange(min=0, min_open=True)   # --timeout: a budget of 0 s or less is a usage error


def unwritable(path: Path) -> str | None:
    """Why a file cannot be written at `path` (checked before a run, so that an hour of verification does
    not end in a failed write), or None when it can."""
    path = Path(path)
    folder = path.absolute().parent
    if path.is_dir():
        return "is a folder"
    if not folder.is_dir():
        return f"the folder {folder} does not exist"
    if not os.access(folder, os.W_OK) or path.exists() and not os.access(path, os.W_OK):
        return "permission denied"
    return None


def _writable(option: str, path: Path | None) -> None:
    """Fail before the run, not after it, when a requested output file cannot be written."""
    problem = unwritable(path) if path is not None else None
    if problem:
        raise click.UsageError(f"{option} {path}: {problem}")


def _shower(stages: tuple[str, ...], as_json: bool):
    """The job's inspector for `--show`: prints the asked passes' products as soon as the core has decided."""
    if not stages:
        return None
    return lambda prepared, report: click.echo(render(stages, prepared, report), err=as_json)


class _Lark(click.Group):
    """Exit statuses mean one thing (DESIGN §2.2): 2 is `unknown`, so a usage error (an unknown option, a
    missing argument) exits 3, like any other bad input, instead of click's 2."""

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(3)
        except click.ClickException as exc:
            exc.show()
            sys.exit(3 if isinstance(exc, click.UsageError) else exc.exit_code)


def _llm(use_llm: bool, budget: int | None):
    """The endpoint for --llm (from the environment, `LLMConfig`), else None: LARK as without one."""
    if not use_llm:
        if budget is not None:
            raise click.UsageError("--llm-budget needs --llm")
        return None
    from orchestrator.llm.chat import LLMConfig

    config = LLMConfig.from_env(budget)
    if config.base_url is None and config.api_key == "none":
        raise click.UsageError("--llm needs an endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY if it asks for one)")
    return config


LLM_OPTIONS = (
    click.option("--llm", "use_llm", is_flag=True,
                 help="Ask an OpenAI-compatible agent ($OPENAI_BASE_URL, $OPENAI_API_KEY, $LARK_LLM_MODEL) for "
                      "hints on goals the heuristics leave open; the core checks every one (docs/llm.md)."),
    click.option("--llm-budget", "llm_budget", type=click.IntRange(min=0), default=None,
                 help="With --llm: at most N LLM calls per task (default 20)."),
)


def _with_llm_options(command):
    for option in reversed(LLM_OPTIONS):
        command = option(command)
    return command


@click.group(cls=_Lark)
@click.version_option(package_name="lark-verifier")
def main() -> None:
    """LARK: prove a GPU kernel computes what its PyTorch reference computes, or refute it with a witness."""


@main.command("verify")
@click.argument("task", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--timeout", "timeout_s", type=POSITIVE, default=600.0, show_default=True,
              help="Time budget of the whole task in seconds (compile, capture, verification, certificate).")
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
@_with_llm_options
@click.option("--exact-constants", is_flag=True,
              help="Never take a kernel float literal as the reference constant within 2 ulps of it (by default "
                   "each such literal is, listed as axiom 'constant 0x... taken as NAME').")
@click.option("--show", "show", type=click.Choice(list(SHOW_STAGES)), multiple=True,
              help="Print what a pass produced (repeatable): ptx, reference, effects, goals, proof, obligations. "
                   "On stdout before the verdict; on stderr with --json.")
def verify_command(task: Path, as_json: bool, timeout_s: float, certificate: Path | None,
                   witness: Path | None, workers: int | None, address: str | None, solver_s: float | None,
                   allow_narrowing: bool, use_llm: bool, llm_budget: int | None, exact_constants: bool,
                   show: tuple[str, ...]) -> None:
    """Verify the task described by TASK (a lark.toml, or a folder holding one). Exit 0 verified, 1 refuted,
    2 unknown, 3 error."""
    from orchestrator import prestart

    if task.is_dir():
        task = task / "lark.toml"      # a folder without one is an intake error that says so
    _writable("--certificate", certificate)
    _writable("--witness", witness)
    llm = _llm(use_llm, llm_budget)
    if not (workers or address):
        prestart.begin(task, timeout_s)  # nvcc and the capture run while the verifier's modules load
    from orchestrator.job import STAGE, Event, run_verify

    def progress(event: Event) -> None:
        if event.kind == STAGE and not as_json:
            click.echo(f"[lark] {event.data['stage']} ...", err=True)

    if workers or address:
        if show:
            raise click.UsageError("--show is not supported with --workers/--address yet")
        if allow_narrowing or exact_constants:
            raise click.UsageError("--allow-narrowing and --exact-constants are not supported with "
                                   "--workers/--address yet")
        from orchestrator.batch import verify_on_ray

        result = verify_on_ray(task, timeout_s, workers, address, certificate, witness, solver_s, llm)
    else:
        from orchestrator.llm.plug import LLMProvers

        result = run_verify(task, timeout_s, progress, certificate, witness, solver_s=solver_s,
                            allow_narrowing=allow_narrowing, llm=LLMProvers(llm) if llm else None,
                            exact_constants=exact_constants,
                            inspect=_shower(show, as_json))
    click.echo(json.dumps(result.to_json()) if as_json else human(result))
    for note in document_notes(result, {"certificate": certificate, "witness": witness}):
        click.echo(note, err=True)
    sys.exit(result.exit_status)


@main.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--solver", type=click.Choice(sorted(SOLVERS)), default="z3", show_default=True,
              help="Which solver(s) re-prove a certificate's obligations.")
def check_command(file: Path, solver: str) -> None:
    """Re-check a certificate, or replay a witness, written by `lark verify`. Exit 0 if it holds, 1 if it
    does not (the message says what no longer matches), 3 if FILE is not a readable certificate or witness,
    or the task it names is found neither where it says nor beside it (cannot check)."""
    from orchestrator.checking import run_check

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
@click.option("--certificates", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write each verified task's certificate and each refuted task's witness into this folder "
                   "(the HTML report links them).")
@click.option("--state", type=click.Path(path_type=Path), default=None,
              help="Results file that makes a rerun skip finished tasks (default: beside --report or --junit, "
                   "else .lark/batch-state.jsonl). Unchanged tasks are also answered from the result store of "
                   "$LARK_CACHE_DIR, whatever the state file.")
@click.option("--rerun", is_flag=True,
              help="Verify every task again, ignoring the answers of the state file and of the result store.")
@click.option("--timeout", "timeout_s", type=POSITIVE, default=600.0, show_default=True,
              help="Wall-time budget of each task in seconds.")
@click.option("--fail-on", "fail_on", type=click.Choice(FAIL_ON), default="refuted", show_default=True,
              help="Lowest verdict that fails the batch: `unknown` makes an undecided task fail it too (exit 2).")
@click.option("--solver-seconds", "solver_s", type=float, default=None,
              help="Solver-time budget of each task in seconds (default: no limit beyond --timeout).")
@_with_llm_options
def batch_command(source: Path, workers: int | None, address: str | None, report: Path | None, junit: Path | None,
                  certificates: Path | None, state: Path | None, rerun: bool, timeout_s: float, fail_on: str,
                  solver_s: float | None, use_llm: bool, llm_budget: int | None) -> None:
    """Verify every lark.toml under SOURCE (a directory), or each manifest listed in SOURCE (a file).
    Exit 3 if some task is error, or SOURCE does not exist or holds no task; else 1 if some task is refuted;
    else 2 if some is unknown and --fail-on unknown; else 0."""
    from orchestrator.batch import NoTasks, batch_and_report

    _writable("--report", report)
    _writable("--junit", junit)
    llm = _llm(use_llm, llm_budget)     # every job shares the endpoint's pool actor (actors/llm.py)
    try:
        outcomes = batch_and_report(source, workers, address, report, junit, state, timeout_s, solver_s,
                                    certificates, rerun, llm)
    except NoTasks as exc:
        raise click.UsageError(str(exc)) from None
    for o in outcomes:
        click.echo(f"{o.result.verdict:9} {o.result.name}{'  (resumed)' if o.resumed else ''}")
    sys.exit(batch_exit_status([o.result for o in outcomes], fail_on))


SERVICE_FAILURE = 4     # `lark submit`: the service could not be reached or refused the call (not a verdict)
STOP_GRACE_S = 2.0      # `lark serve` on SIGTERM or ^C: how long running calls may finish (jobs resume at restart)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs --token.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=50051, show_default=True,
              help="Port to bind (0: any free port; the one bound is printed).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Jobs verified at once (each in its own warm worker process).")
@click.option("--db", type=click.Path(path_type=Path), default=Path(".lark") / "jobs.db", show_default=True,
              help="The SQLite file the jobs persist in (a restarted server resumes them).")
@click.option("--token", envvar="LARK_TOKEN", default=None,
              help="Bearer token every call must carry (default: $LARK_TOKEN).")
@click.option("--address", envvar="RAY_ADDRESS", default=None,
              help="Fan every job's obligations out to checker actors on this Ray cluster (default: $RAY_ADDRESS; "
                   "none: solved in the worker processes).")
@click.option("--checkers", type=click.IntRange(min=1), default=2, show_default=True,
              help="With --address: checker actors (pools of warm solvers) to start on the cluster.")
def serve_command(host: str, port: int, workers: int, db: Path, token: str | None, address: str | None,
                  checkers: int) -> None:
    """Serve the gRPC API of protos/lark.proto (with health and reflection) until interrupted."""
    from orchestrator.server import serve

    try:
        running = serve(host, port, workers, db, token, address=address, checkers=checkers)
    except (ValueError, OSError) as exc:
        raise click.UsageError(str(exc)) from None
    where = f", obligations on {checkers} checker actors at {address}" if address else ""
    click.echo(f"lark serve: listening on {host}:{running.port} ({workers} workers{where}, jobs in {db})",
               err=True)
    signal.signal(signal.SIGTERM, lambda *_: running.server.stop(STOP_GRACE_S))
    try:
        running.server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    running.stop(STOP_GRACE_S)


@main.command("submit")
@click.argument("task", type=click.Path(exists=True, path_type=Path))
@click.option("--server", "address", required=True, help="The `lark serve` address, HOST:PORT.")
@click.option("--wait", is_flag=True, help="Follow the job to its verdict; exit as `lark verify` would.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--token", envvar="LARK_TOKEN", default=None, help="Bearer token (default: $LARK_TOKEN).")
@click.option("--timeout", "timeout_s", type=float, default=0.0,
              help="The job's wall-time budget in seconds (default: the server's).")
def submit_command(task: Path, address: str, wait: bool, as_json: bool, token: str | None, timeout_s: float) -> None:
    """Submit TASK (a folder or its lark.toml) to a LARK server. Without --wait, print the job id and exit 0;
    with it, exit 0 verified, 1 refuted, 2 unknown, 3 error (bad input). Exit 4 if the server cannot be
    reached or refuses the call."""
    import grpc

    from orchestrator.client import read_task, submit

    def progress(event) -> None:
        if event.WhichOneof("event") == "stage" and not as_json:
            click.echo(f"[lark] {event.stage.stage} ...", err=True)

    try:
        submitted = submit(address, read_task(task), token, wait, timeout_s, on_event=progress)
    except grpc.RpcError as exc:
        bad_input = exc.code() == grpc.StatusCode.INVALID_ARGUMENT
        shown = {"error": exc.code().name, "message": exc.details()}
        click.echo(json.dumps(shown) if as_json else f"error ({exc.code().name}): {exc.details()}",
                   err=not as_json)
        sys.exit(3 if bad_input else SERVICE_FAILURE)
    if not wait:
        shown = {"job_id": submitted.job_id, "duplicate": submitted.duplicate}
        click.echo(json.dumps(shown) if as_json else submitted.job_id)
        sys.exit(0)
    if submitted.result is None:
        click.echo(f"error: the stream of job {submitted.job_id} ended without a verdict", err=True)
        sys.exit(SERVICE_FAILURE)
    result = submitted.result
    click.echo(json.dumps(result.to_json()) if as_json else human(result))
    sys.exit(result.exit_status)
