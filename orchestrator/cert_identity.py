"""What a certificate or witness is about, and finding the task again when it is checked.

A task's identity is everything that fixes its meaning: the kernel source and the PTX compiled from it, the
reference file and its exported graph, the launch, the argument list, and the bound buffers. `lark check`
recomputes it from the manifest and compares field by field, so a mismatch names the field that changed.
The comparison runs twice: first on what the manifest alone says (cheap, no compiler or torch), then on
the full identity after the pipeline has compiled the kernel and captured the reference again. "Again"
means afresh: the PTX and capture caches are untrusted (their keys see what a reference or kernel reads from
its own folder, not what it reads from anywhere else), so the pipeline runs with a throwaway, empty
$LARK_CACHE_DIR.

The PTX is hashed without the folders of its `.file` debug directives (nvcc and Triton write the source's
absolute path there) and without its `.debug_*` sections (their strings hold internal-linkage names that nvcc
derives from the source's path), so that a task folder can move, or be checked on another machine, and keep
its hash. Neither carries semantics: the parser reads `.loc` lines only for naming source lines.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import z3

from orchestrator import cert_schema
from orchestrator.manifest import IntakeError, Task, load_task
from orchestrator.pipeline import Prepared, prepare
from semantics.axioms import AXIOM_TABLE_VERSION
from semantics.errors import Unsupported
from semantics.torch.capture import ReferenceError as ReferenceCaptureError

HASH_LABELS = {
    "kernel.sha256": "the kernel source",
    "kernel.ptx_sha256": "the kernel's PTX",
    "reference.sha256": "the reference source",
    "reference.graph_hash": "the reference's exported graph",
}
_FILE_FOLDER = re.compile(r'^(\s*\.file\s+\d+\s+")[^"\n]*/', re.MULTILINE)
_DEBUG_SECTION = re.compile(r'^\s*\.section\s+\.debug\w*\s*\{.*?^\s*\}', re.MULTILINE | re.DOTALL)


class Rejected(Exception):
    """The document does not hold; `problems` says what no longer matches, one line each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def ptx_sha256(ptx: str) -> str:
    return sha256(_DEBUG_SECTION.sub("", _FILE_FOLDER.sub(r"\1", ptx)))


def identity(task: Task, prepared: Prepared | None = None) -> dict:
    """The task's identity as certificate JSON; without `prepared`, only what the manifest itself fixes."""
    kernel = {"source": os.path.relpath(task.kernel.source, task.root), "language": task.kernel.language,
              "entry": task.kernel.entry, "arch": task.kernel.arch, "sha256": sha256(task.kernel.source.read_bytes())}
    ref = task.reference
    reference = {"source": os.path.relpath(ref.source, task.root), "sha256": sha256(ref.source.read_bytes()),
                 "inputs": list(ref.inputs), "outputs": list(ref.outputs), "parameters": dict(ref.parameters)}
    launch = {"grid": list(task.launch.grid), "dynamic_shared_bytes": task.launch.dynamic_shared_bytes}
    ident = {"name": task.name, "kernel": kernel, "reference": reference, "launch": launch,
             "args": list(task.launch.args)}
    if prepared is None:
        return ident
    problem = prepared.problem
    kernel["ptx_sha256"] = ptx_sha256(prepared.compiled.ptx)
    reference["graph_hash"] = prepared.graph.graph_hash
    launch["block"] = list(problem.launch.block)
    ident["buffers"] = {name: {"dtype": b.dtype, "numel": b.numel, "role": b.role, "init": b.init}
                        for name, b in problem.buffers.items()}
    ident["scalars"] = {arg: "float" if z3.is_real(value) else "int"
                        for arg, value in zip(task.launch.args, problem.args, strict=False)
                        if isinstance(arg, str) and isinstance(value, z3.ExprRef)}
    return ident


def differences(recorded: dict, current: dict, everything: bool, path: str = "") -> list[str]:
    """One message per field whose value differs; `everything` also reports fields only `recorded` has."""
    keys = list(current) + ([k for k in recorded if k not in current] if everything else [])
    problems = []
    for key in keys:
        where = f"{path}{key}"
        old, new = recorded.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            problems += differences(old, new, everything, f"{where}.")
        elif old != new and where in HASH_LABELS:
            problems.append(f"{HASH_LABELS[where]} no longer matches ({where}): SHA-256 {new} now, {old} recorded")
        elif old != new:
            problems.append(f"task.{where} no longer matches: recorded {old!r}, now {new!r}")
    return problems


@contextmanager
def _fresh_caches() -> Iterator[None]:
    saved = os.environ.get("LARK_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="lark-check-") as empty:
        os.environ["LARK_CACHE_DIR"] = empty
        try:
            yield
        finally:
            if saved is None:
                del os.environ["LARK_CACHE_DIR"]
            else:
                os.environ["LARK_CACHE_DIR"] = saved


class TaskMissing(Exception):
    """The task a document names is not where it says, nor beside the document: it cannot be checked (which
    is not the same as failing the check)."""


def manifest_path(document: cert_schema.Certificate | cert_schema.Witness, document_path: Path) -> Path:
    """The manifest a document names, relative to the document's own folder (or absolute). A document copied
    elsewhere with its task folder finds it there too: when the recorded path does not lead to a manifest,
    the trailing parts of it are tried under the document's folder, longest first (`../../lib/relu/lark.toml`
    -> `lib/relu/lark.toml`, `relu/lark.toml`, `lark.toml`). Whichever is found must still be the same task:
    `rederive` compares its identity field by field."""
    folder = Path(document_path).parent
    recorded = Path(document.manifest)
    tails = [Path(*recorded.parts[i:]) for i in range(len(recorded.parts)) if ".." not in recorded.parts[i:]]
    candidates = [folder / recorded] + [folder / tail for tail in tails if not tail.is_absolute()]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise TaskMissing(f"the task's manifest {document.manifest} is not found from {folder} (nor "
                      f"{', '.join(str(c) for c in dict.fromkeys(candidates[1:]))})")


def rederive(document: cert_schema.Certificate | cert_schema.Witness, document_path: Path) -> Prepared:
    """Run the pipeline again on the task the document names, after checking that it is the same task under
    the same axiom table."""
    if document.axioms.table_version != AXIOM_TABLE_VERSION:
        raise Rejected([f"axiom table version {document.axioms.table_version} is not the current "
                        f"{AXIOM_TABLE_VERSION}"])
    if sha256(document.kernel_source_text) != document.task.kernel.sha256:
        raise Rejected(["the kernel source text in the file does not match its own task.kernel.sha256"])
    recorded = document.task.model_dump()
    path = manifest_path(document, document_path)
    try:
        task = load_task(path)
        problems = differences(recorded, identity(task), everything=False)
        if problems:
            raise Rejected(problems)
        with _fresh_caches():
            # a certificate made with --allow-narrowing lists the axiom; the check re-derives under it. One
            # whose literals were taken as reference constants lists float.constant: re-derived the same way
            used = document.axioms.used
            prepared = prepare(path, allow_narrowing="float.narrowing" in used,
                               exact_constants="float.constant" not in used)
    except (IntakeError, ReferenceCaptureError, Unsupported) as exc:
        raise Rejected([f"the task {path} no longer prepares: {exc}"]) from None
    problems = differences(recorded, identity(task, prepared), everything=True)
    if problems:
        raise Rejected(problems)
    return prepared
