"""`lark batch`: many tasks on a Ray fleet, resumable; and `lark verify --workers` (one task, same fleet).

Resuming: every finished task is appended to a JSONL state file under a key that hashes what decides its
result (issue 13): the manifest; every file the kernel's compile reads (for CUDA the headers nvcc lists,
known from the compile cache's entry or a preprocessing-only nvcc run; for Triton the `.py` tree of its
folder) with the compiler's version and flags; the reference and the `.py` tree of its folder with the torch
version; LARK's version, the semantics version and the solvers' versions; the budgets. Paths inside the
task's folder count relative to it, so a rerun skips exactly the tasks whose inputs have not changed,
wherever the folder moved. Only results
that `run_verify` produced are recorded: a task the cluster lost is reported as `error` for this run and
tried again by the next.

Answering from stored results: a finished, reproducible result is also kept in the result store of the
cache directory (`result_store`), under the same key, so a later batch with another state file answers it
too. A rerun whose every task is answered this way starts no Ray (nor imports it), compiles nothing and
captures nothing: computing the keys reads the compile cache's recorded inputs and hashes files. Ray starts
only for the tasks that must really run; stderr says how many were answered from stored results.
"""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from lean_pool.cache import SOLVER_DISTRIBUTIONS, solver_version
from orchestrator import version as lark_versions
from orchestrator.capture_cache import capture_ahead, reference_inputs
from orchestrator.fingerprint import FileHashes, digest, hash_files
from orchestrator.frontends import kernel_inputs
from orchestrator.manifest import IntakeError, load_task
from orchestrator.prestart import CAPTURE_S
from orchestrator.report import write_html, write_junit
from orchestrator.result import Result, error
from orchestrator.result_store import ResultStore
from semantics import version as semantics_versions

if TYPE_CHECKING:
    from orchestrator.llm.chat import LLMConfig

MANIFEST = "lark.toml"
DEFAULT_STATE = Path(".lark") / "batch-state.jsonl"
KEY_THREADS = min(16, os.cpu_count() or 1)   # resume keys computed at once (mostly nvcc -M and hashing)


class NoTasks(Exception):
    """SOURCE holds no task: a batch of nothing is a mistake (a wrong folder), not a success."""


def discover(source: Path) -> list[Path]:
    """Every lark.toml under a directory, or the manifests a list file names (one per line, `#` comments,
    paths relative to the list file)."""
    if source.is_dir():
        return sorted(source.rglob(MANIFEST))
    lines = (line.split("#", 1)[0].strip() for line in source.read_text(encoding="utf-8").splitlines())
    return [(source.parent / line) for line in lines if line]


def task_key(manifest: Path, options: Mapping[str, object]) -> str:
    """The resume key of one task run with `options` (the settings that can change a verdict)."""
    record = {"lark": lark_versions.lark_version(), "semantics": semantics_versions.semantics_version(),
              "solvers": {name: solver_version(name) for name in SOLVER_DISTRIBUTIONS}, "options": dict(options)}
    try:
        text = manifest.read_bytes()
    except OSError:
        return digest(record) + "-unreadable"
    record["manifest"] = text.decode(errors="replace")
    record["sources"] = _task_sources(manifest)
    return digest(record)


def task_keys(manifests: list[Path], options: Mapping[str, object],
              documents: Mapping[Path, tuple[Path, Path]] | None = None) -> dict[Path, str]:
    """Every task's key, several at once: a CUDA task not yet compiled costs a preprocessing nvcc run
    (~0.2 s), which would add minutes to a cold batch of a thousand kernels one by one. With `documents`,
    each task's key also covers the paths its certificate and witness are written to (a stored result
    answers only a rerun that asks for its documents where they were written)."""
    def key(manifest: Path) -> str:
        paths = documents.get(manifest) if documents else None
        return task_key(manifest, {**options, "documents": [str(p) for p in paths]} if paths else options)

    with ThreadPoolExecutor(max_workers=KEY_THREADS) as pool:
        return dict(zip(manifests, pool.map(key, manifests), strict=True))


def _task_sources(manifest: Path) -> dict[str, object]:
    """The kernel's and the reference's inputs; for a manifest that does not load, the files it names."""
    root = manifest.absolute().parent
    try:
        task = load_task(manifest)
    except IntakeError:
        return {"named": _relative(hash_files(root / name for name in _named_files(manifest)), root)}
    kernel = kernel_inputs(task.kernel)
    kernel["inputs"] = _relative(kernel.get("inputs", []), root)
    sources: dict[str, object] = {"kernel": kernel}
    if task.reference is not None:
        sources["reference"] = reference_inputs(task.reference.source)
    return sources


def _named_files(manifest: Path) -> list[str]:
    try:
        task = tomllib.loads(manifest.read_text(encoding="utf-8"))
        named = [task.get("kernel", {}).get("source"), task.get("reference", {}).get("source")]
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        return []
    return [name for name in named if isinstance(name, str)]


def _relative(records: FileHashes, root: Path) -> FileHashes:
    """Paths under the task's folder made relative to it (moving the folder changes no key)."""
    resolved = root.resolve()
    return [[Path(path).relative_to(resolved).as_posix() if Path(path).is_relative_to(resolved) else path, sha]
            for path, sha in records]


class State:
    """The append-only results file. A torn last line (a killed run) is ignored."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, Result] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.done[entry["key"]] = Result(**entry["result"])
                except (ValueError, KeyError, TypeError):
                    continue

    def record(self, key: str, manifest: Path, result: Result) -> None:
        self.done[key] = result
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "manifest": str(manifest), "result": result.to_json()}) + "\n")


@dataclass
class Outcome:
    manifest: Path
    result: Result
    resumed: bool           # answered without running: from this batch's state file or the result store
    stored: bool = False    # answered from the result store (an earlier batch with another state file)


def document_paths(manifests: list[Path], folder: Path) -> dict[Path, tuple[Path, Path]]:
    """Each task's (certificate, witness) file in `folder`, named by its folder's path relative to what the
    tasks share (two tasks named alike in different folders get different files)."""
    folders = [m.absolute().parent for m in manifests]
    root = Path(os.path.commonpath(folders)) if folders else Path()
    root = root.parent if len(folders) == 1 else root
    stems = {m: "__".join(f.relative_to(root).parts) or f.name for m, f in zip(manifests, folders, strict=True)}
    return {m: (folder / f"{stem}.cert.json", folder / f"{stem}.witness.json") for m, stem in stems.items()}


def run_batch(manifests: list[Path], state: State, workers: int | None = None, address: str | None = None,
              timeout_s: float = 600.0, solver_s: float | None = None, show_progress: bool = True,
              certificates: Path | None = None, store: ResultStore | None = None,
              rerun: bool = False, llm: LLMConfig | None = None) -> list[Outcome]:
    """Verify every manifest not already answered by `state` or `store` (the cache directory's result store
    by default); results in the order of `manifests`. With `certificates`, each verified task's certificate
    and each refuted task's witness is written there. `rerun` verifies every task again. `llm`: every job
    asks this endpoint when its heuristics are stuck, through one pool actor (one rate limit for the batch)."""
    store = store or ResultStore()
    documents = document_paths(manifests, certificates.absolute()) if certificates else {}
    options = {"timeout_s": timeout_s, "solver_s": solver_s}
    if llm is not None:   # a task verified with an agent's help is another run than one without
        options["llm"] = {"endpoint": llm.base_url, "model": llm.model, "calls": llm.calls}
    keys = task_keys(manifests, options, documents)
    outcomes = {} if rerun else answered(manifests, keys, state, store, documents)
    todo = [m for m in manifests if m not in outcomes]
    if show_progress:
        print(answered_line(list(outcomes.values()), len(manifests)), file=sys.stderr)
    bar = tqdm(total=len(manifests), initial=len(outcomes), desc="lark batch", unit="task", file=sys.stderr,
               disable=not show_progress)
    verdicts = Counter(o.result.verdict for o in outcomes.values())
    by_text = {str(m): m for m in todo}

    def on_done(text: str, result: Result | None, failure: str | None) -> None:
        manifest = by_text[text]
        if result is None:
            result = error(manifest.parent.name, f"not verified: {failure}", 0.0)
        else:
            state.record(keys[manifest], manifest, result)
            store.put(keys[manifest], result, _kinds(documents.get(manifest)))
        outcomes[manifest] = Outcome(manifest, result, False)
        verdicts[result.verdict] += 1
        bar.set_postfix(verdicts, refresh=False)
        bar.update()

    if todo:
        if not (address or os.environ.get("RAY_ADDRESS")):
            _capture_ahead(todo, timeout_s, workers or os.cpu_count() or 1, bar)
        _run_on_ray(todo, workers, address, timeout_s, solver_s, on_done, documents, llm)
    bar.close()
    return [outcomes[m] for m in manifests]


def _capture_ahead(todo: list[Path], timeout_s: float, workers: int, bar: tqdm) -> None:
    """On a local fleet (whose actors share this machine's cache directory), capture every reference the
    batch needs with `workers` warm capture workers first: torch starts once per worker instead of once per
    task (`capture_cache.capture_ahead`). A manifest that does not load is left to its job to report."""
    sources = []
    for manifest in todo:
        try:
            task = load_task(manifest)
        except (IntakeError, OSError):
            continue
        if task.reference is not None and not task.safety_only:
            sources.append(task.reference.source)
    if sources:
        bar.set_description("lark batch: capturing references")
        capture_ahead(sources, min(CAPTURE_S, timeout_s), workers)
        bar.set_description("lark batch")


def answered(manifests: list[Path], keys: Mapping[Path, str], state: State, store: ResultStore,
             documents: Mapping[Path, tuple[Path, Path]]) -> dict[Path, Outcome]:
    """The tasks answered without running: by this batch's state file, else by the result store (whose
    answers are journaled in the state file too, so that this batch resumes from its own file)."""
    found = {}
    for manifest in manifests:
        key = keys[manifest]
        if key in state.done:
            found[manifest] = Outcome(manifest, state.done[key], True)
        elif (result := store.get(key, _kinds(documents.get(manifest)))) is not None:
            state.record(key, manifest, result)
            found[manifest] = Outcome(manifest, result, True, stored=True)
    return found


def answered_line(outcomes: list[Outcome], total: int) -> str:
    """The stderr line saying how much of the batch was answered from stored results and what runs."""
    stored = sum(o.stored for o in outcomes)
    running = total - len(outcomes)
    then = f"starting Ray for {running}" if running else "nothing to run, Ray not started"
    return (f"lark batch: {len(outcomes)} of {total} tasks answered from stored results "
            f"({len(outcomes) - stored} from the state file, {stored} from the result store); {then}")


def _kinds(paths: tuple[Path, Path] | None) -> dict[str, Path] | None:
    return {"certificate": paths[0], "witness": paths[1]} if paths else None


def _run_on_ray(todo: list[Path], workers: int | None, address: str | None, timeout_s: float,
                solver_s: float | None, on_done, documents: Mapping[Path, tuple[Path, Path]],
                llm: LLMConfig | None = None) -> None:
    """The tasks that must really run, on a fleet. Ray is imported only here: a rerun answered from stored
    results, and plain `lark verify`, never pay for it (about a second of imports, several of start-up)."""
    from actors.cluster import ray_session
    from actors.fleet import Fleet

    with ray_session(workers, address) as n:
        fleet = Fleet(verifiers=n)
        try:
            fleet.run([str(m) for m in todo], timeout_s, solver_s, on_done,
                      documents={str(m): documents[m] for m in todo} if documents else None, llm=llm)
        except KeyboardInterrupt:
            fleet.cancel()
            raise


def batch_and_report(source: Path, workers: int | None, address: str | None, report: Path | None,
                     junit: Path | None, state: Path | None, timeout_s: float, solver_s: float | None,
                     certificates: Path | None = None, rerun: bool = False,
                     llm: LLMConfig | None = None) -> list[Outcome]:
    """`lark batch`: discover, run (resuming from the state file and the result store), write the reports."""
    started, clock = datetime.now(UTC), time.monotonic()
    anchor = report or junit
    state_path = state or (anchor.with_name(anchor.name + ".state.jsonl") if anchor else DEFAULT_STATE)
    manifests = discover(source)
    if not manifests:
        where = f"under the folder {source}" if source.is_dir() else f"listed in {source}"
        raise NoTasks(f"no {MANIFEST} {where}: nothing to verify")
    if certificates:
        certificates.mkdir(parents=True, exist_ok=True)
    outcomes = run_batch(manifests, State(state_path), workers, address, timeout_s, solver_s,
                         certificates=certificates, rerun=rerun, llm=llm)
    rows = [(o.manifest, o.result) for o in outcomes]
    if report:
        documents = document_paths(manifests, certificates.absolute()) if certificates else None
        write_html(report, rows, time.monotonic() - clock, started, documents)
    if junit:
        write_junit(junit, rows)
    return outcomes


def verify_on_ray(manifest: Path, timeout_s: float, workers: int | None, address: str | None,
                  certificate: Path | None = None, witness: Path | None = None,
                  solver_s: float | None = None, llm: LLMConfig | None = None) -> Result:
    """`lark verify --workers N`: one verify actor, N checker actors (the same fleet as a batch)."""
    from actors.cluster import ray_session
    from actors.fleet import Fleet

    found: list[Result] = []

    def on_done(_text: str, result: Result | None, failure: str | None) -> None:
        found.append(result or error(manifest.parent.name, f"not verified: {failure}", 0.0))

    with ray_session(workers, address) as n:
        Fleet(verifiers=1, checkers=n).run([str(manifest)], timeout_s, solver_s, on_done,
                                           certificate=certificate, witness=witness, llm=llm)
    return found[0]
