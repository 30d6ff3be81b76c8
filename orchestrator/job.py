"""The one job runner: a task, from its sources to the JSON result of DESIGN §2.2, with progress events and
cancellation. `lark verify`, the Ray verify actors and the gRPC server all call `run_verify` (a task on disk)
or `run_sources` (a task sent as files).

Events go to a callback as they happen, so a caller can stream them (the server) or print them (the CLI):
a stage the core starts, a search goal it closes, each counterexample of the final result (a replayed
witness, not a failed hint), then the verdict with the whole result. A cancellation token stops the job:
at the next stage boundary (the job ends `unknown`, "cancelled"), and within a stage through the job's
budget, which answers every further obligation `unknown` and interrupts a running in-process z3 query.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path, PurePosixPath

from lean_pool.budget import CANCELLED, Budget
from lean_pool.cache import DiskLemmaStore
from lean_pool.cancel import CURRENT, CancelToken
from lean_pool.checker import Checker, Z3Checker
from lean_pool.stack import assemble
from orchestrator import metrics
from orchestrator.certificate import NoCertificate, write_certificate, write_witness
from orchestrator.deadline import DeadlinePassed, within
from orchestrator.explain import annotate
from orchestrator.llm.plug import LLMProvers
from orchestrator.manifest import IntakeError
from orchestrator.pipeline import Prepared, prepare
from orchestrator.progress import Counting
from orchestrator.provers import bounds, inverse, reindex
from orchestrator.result import Result, error, from_report
from orchestrator.search import Closed, Goal, ProverStrategy, Search, Strategy
from orchestrator.telemetry import Stages, TracingChecker, span
from semantics.errors import Unsupported
from semantics.torch.capture import ReferenceError as ReferenceCaptureError
from semantics.verdict import Provers, Report, verify

PROVERS = Provers(inverse=inverse.propose, bounds=bounds.candidates, reindex=reindex.propose, split=inverse.split)
STRATEGIES: dict[str, list[Strategy]] = {"bounds": [ProverStrategy("bounds", bounds.candidates)],
                                         "reindex": [ProverStrategy("reindex", reindex.candidates)]}
SEARCH_WIDTH = 2     # obligations a local search checks at once (in-process z3 solves outside the GIL)
MANIFEST = "lark.toml"

# The kinds of event a job reports, in the order they can come ("queued" is the server's, before the job runs).
QUEUED, STAGE, GOAL, COUNTEREXAMPLE, VERDICT = "queued", "stage", "goal", "counterexample", "verdict"


@dataclass(frozen=True)
class Event:
    kind: str        # one of the kinds above
    data: dict       # stage: {"stage"}; goal: {"kind", "key", "proved", "strategy", "reason"};
                     # counterexample: a finding {"property", "message", "witness"}; verdict: {"result"}


EventSink = Callable[[Event], None]
Inspector = Callable[[Prepared, Report], None]   # sees the passes' products (`lark verify --show`)


class Cancelled(Exception):
    """Raised at a stage boundary of a cancelled job; `run_verify` turns it into an `unknown` result."""


@dataclass(frozen=True)
class Sources:
    """A task sent as data: the manifest's text and the files it names (relative POSIX paths -> bytes)."""
    name: str
    manifest: str
    files: dict[str, bytes]

    def write(self, root: Path) -> Path:
        """Lay the task out under `root`/name (so a result that fails before the manifest is read is still
        named); returns the manifest's path. A file name that would land outside the folder is bad input."""
        folder = root / (self.name or "task")
        for name, data in self.files.items():
            relative = PurePosixPath(name)
            if not relative.parts or relative.is_absolute() or ".." in relative.parts or "\\" in name:
                raise IntakeError("files", f"{name!r} is not a relative path inside the task folder")
            if name == MANIFEST:
                raise IntakeError("files", f"the manifest is sent as its own text, not as a file {name!r}")
            target = folder / relative
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except OSError as exc:
                raise IntakeError("files", f"{name!r} cannot be written: {exc.strerror}") from None
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST).write_text(self.manifest, encoding="utf-8")
        return folder / MANIFEST


class _Reporter:
    """The core's progress callback and the search's goal callback as events; stops a cancelled job."""

    def __init__(self, events: EventSink | None, cancel: CancelToken | None):
        self.events = events
        self.cancel = cancel

    def emit(self, kind: str, data: dict) -> None:
        if self.events is not None:
            self.events(Event(kind, data))

    current = "intake"

    def stage(self, stage: str) -> None:
        if self.cancel is not None and self.cancel.cancelled:
            raise Cancelled(stage)
        self.current = stage
        self.emit(STAGE, {"stage": stage})

    def progress(self, checked: int, elapsed_s: float) -> None:
        """A long stage's progress, as a stage event of the same stage (`progress.Counting` calls it)."""
        self.emit(STAGE, {"stage": f"{self.current}: {checked} obligations checked, {elapsed_s:.0f} s since the start"})

    def goal(self, goal: Goal, closed: Closed) -> None:
        self.emit(GOAL, {"kind": goal.kind, "key": goal.key, "proved": closed.proved, "strategy": closed.strategy,
                         "reason": closed.reason})


def run_verify(manifest: Path, timeout_s: float, events: EventSink | None = None, certificate: Path | None = None,
               witness: Path | None = None, checker: Checker | None = None, budget: Budget | None = None,
               search_width: int = SEARCH_WIDTH, solver_s: float | None = None,
               cancel: CancelToken | None = None, allow_narrowing: bool = False,
               llm: LLMProvers | None = None, exact_constants: bool = False,
               inspect: Inspector | None = None) -> Result:
    """Verify one task; bad input becomes an `error` result rather than an exception. A verified task writes
    its certificate to `certificate`, a refuted one its witness to `witness`, when asked. `checker` defaults
    to the embedded local one (z3 in-process, the lemma cache, a budget of `timeout_s` wall seconds and
    `solver_s` solver seconds); a caller that passes a checker passes the `budget` it charges, which the
    search obeys too. `cancel`, set from any thread, stops the job (its result is `unknown`, "cancelled").
    `allow_narrowing` takes narrowing float conversions as the listed axiom float.narrowing;
    `exact_constants` forbids taking a kernel literal as the reference constant 2 ulps away. `llm`, when
    given, adds LLM provers to the search (orchestrator/llm/; off by default). `inspect(prepared, report)`,
    when given, sees what the passes produced once the core has decided (`lark verify --show`)."""
    if checker is None:
        budget = Budget(wall_s=timeout_s, solver_s=solver_s)
        checker = assemble(Z3Checker(), DiskLemmaStore(), budget)
    budget = budget or Budget(wall_s=timeout_s, solver_s=solver_s)
    cancel = cancel or CancelToken()
    reporter = _Reporter(events, cancel)
    reset = CURRENT.set(cancel)          # a running in-process z3 query of this thread stops when cancelled
    try:
        with cancel.stopping(budget.cancel):
            counted = Counting(TracingChecker(checker), reporter.progress)
            result = _run(manifest, timeout_s, reporter, certificate, witness, counted, budget, search_width,
                          allow_narrowing, llm, exact_constants, inspect)
    finally:
        CURRENT.reset(reset)
    for finding in result.findings:
        reporter.emit(COUNTEREXAMPLE, finding)
    reporter.emit(VERDICT, {"result": result.to_json()})
    metrics.record_job(result)
    return result


def _run(manifest: Path, timeout_s: float, reporter: _Reporter, certificate: Path | None, witness: Path | None,
         checker: Checker, budget: Budget, search_width: int, allow_narrowing: bool = False,
         llm: LLMProvers | None = None, exact_constants: bool = False,
         inspect: Inspector | None = None) -> Result:
    start = time.monotonic()
    deadline = start + timeout_s
    name = manifest.parent.name
    stages = Stages(reporter.stage)
    prepared = None
    with span("lark.job", {"lark.manifest": str(manifest)}) as job, \
            Search(checker, STRATEGIES, budget, search_width, on_close=reporter.goal) as search:
        try:
            reporter.stage("intake")
            prepared = prepare(manifest, allow_narrowing, deadline=deadline, on_stage=reporter.stage,
                               exact_constants=exact_constants)
            name = prepared.task.name
            provers = replace(PROVERS, search=search.hook)
            if llm is not None:
                provers = llm.plug(search, provers, prepared)
            report = within(deadline, lambda: verify(prepared.problem, checker, provers, timeout_s, stages))
            if reporter.cancel.cancelled:
                raise Cancelled("verdict")
            if inspect is not None:
                inspect(prepared, report)
        except (IntakeError, ReferenceCaptureError) as exc:
            return error(name, str(exc), time.monotonic() - start)
        except Cancelled:
            return unknown(name, CANCELLED, time.monotonic() - start)
        except DeadlinePassed:
            stopped = unknown(name, f"wall-time budget of {timeout_s:g} s exhausted (during {reporter.current})",
                              time.monotonic() - start)
            stopped.stats["obligations"] = getattr(checker, "checked", 0)
            _inspect_partial(inspect, prepared, checker, stopped.reason)
            return stopped
        except Unsupported as exc:
            _inspect_partial(inspect, prepared, checker, f"unsupported: {exc}")
            return unknown(name, f"unsupported: {exc}", time.monotonic() - start)
        except Exception as exc:  # noqa: BLE001 - a crash must never read as a verdict; it is unknown
            return unknown(name, f"internal error: {type(exc).__name__}: {exc}", time.monotonic() - start)
        finally:
            stages.close()
        result = from_report(name, report, time.monotonic() - start)
        result.stats["search"] = search.stats.to_json()
        if llm is not None:
            result.stats.update(llm.stats())
        stop = budget.stop_reason()
        if result.verdict == "unknown" and stop is not None:   # name the budget that left the job open
            result.reason = f"{stop}: {result.reason}"
        job.set_attributes({"lark.task": name, "lark.verdict": result.verdict,
                            **{f"lark.property.{p}": state for p, state in result.properties.items()}})
    annotate(result, prepared)
    _write_documents(result, manifest, prepared, report, {"certificate": certificate, "witness": witness}, deadline)
    return result


def _inspect_partial(inspect: Inspector | None, prepared, checker: Checker, reason: str) -> None:
    """`--show` for a run that stopped before the core decided: what intake prepared (ptx, reference) and the
    obligations decided so far; the passes that did not finish show as not run."""
    if inspect is None or prepared is None:
        return
    inspect(prepared, Report("unknown", {}, [], reason, obligations=list(getattr(checker, "log", []))))


WRITERS = {"certificate": ("verified", write_certificate), "witness": ("refuted", write_witness)}


def _write_documents(result: Result, manifest: Path, prepared, report, paths: dict[str, Path | None],
                     deadline: float) -> None:
    """Write the certificate of a verified task, the witness of a refuted one, where asked, before the
    deadline (a certificate replays the proof). A file that cannot be written, in time or at all, makes the
    result an error: the user asked for it, and a CI gate must not pass without it. The accepted hints not
    replaying (NoCertificate) is LARK's own shortfall, said in the reason."""
    for kind, (verdict, write) in WRITERS.items():
        path = paths.get(kind)
        if path is None or result.verdict != verdict:
            continue
        replay = CancelToken()              # stops the replay's running z3 query at the deadline
        reset = CURRENT.set(replay)
        try:
            written = within(deadline, partial(write, path, manifest, prepared, report), replay.cancel)
        except NoCertificate as exc:
            result.reason = f"{kind} not written: {exc}"
            continue
        except (OSError, DeadlinePassed) as exc:
            why = exc.strerror or str(exc) if isinstance(exc, OSError) else "the wall-time budget ran out"
            result.reason = f"the task is {verdict}, but the {kind} cannot be written to {path}: {why}"
            result.verdict = "error"
            continue
        finally:
            CURRENT.reset(reset)
        if kind == "certificate":
            result.certificate = str(written)


def run_sources(sources: Sources, timeout_s: float, events: EventSink | None = None,
                cancel: CancelToken | None = None, solver_s: float | None = None, checker: Checker | None = None,
                budget: Budget | None = None) -> Result:
    """`run_verify` on a task sent as data, laid out in a temporary folder for the job's lifetime. Files that
    cannot be laid out are bad input (an `error` result naming the field). `checker` and the `budget` it
    charges, when given, are the job's (a cluster's checker actors: `actors.service`)."""
    with tempfile.TemporaryDirectory(prefix="lark-job-") as root:
        try:
            manifest = sources.write(Path(root))
        except IntakeError as exc:
            result = error(sources.name, str(exc), 0.0)
            if events is not None:
                events(Event(VERDICT, {"result": result.to_json()}))
            return result
        return run_verify(manifest, timeout_s, events, solver_s=solver_s, cancel=cancel, checker=checker,
                          budget=budget)


def unknown(name: str, reason: str, wall_seconds: float) -> Result:
    """A result with every property unknown, for a job that ended before the core decided it."""
    result = error(name, reason, wall_seconds)
    result.verdict = "unknown"
    result.properties = {p: "unknown" for p in result.properties}
    return result
