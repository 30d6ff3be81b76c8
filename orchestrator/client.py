"""`lark submit`: send a task folder to a `lark serve` and follow its job (the client side of protos/lark.proto).

The task goes as data: the manifest's text and the files it names (kernel and reference sources). Without
`wait` the call returns once the job is queued (the job goes on in the server); with it, the stream is
followed to the verdict, whose result is the one `lark verify` would print.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

import protos
from orchestrator.job import MANIFEST
from orchestrator.result import Result

pb, pb_grpc = protos.load()


def read_task(path: Path) -> pb.Task:
    """A task folder (or its lark.toml) as a `Task` message: the manifest and the source files it names."""
    manifest = path / MANIFEST if path.is_dir() else path
    text = manifest.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raw = {}                       # the server names what is wrong with it
    files = {}
    for section in ("kernel", "reference"):
        named = raw.get(section, {}).get("source") if isinstance(raw.get(section), dict) else None
        if isinstance(named, str) and (manifest.parent / named).is_file():
            files[named] = (manifest.parent / named).read_bytes()
    return pb.Task(name=manifest.parent.name, manifest=text, files=files)


def metadata(token: str | None) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")] if token else []


@dataclass
class Submitted:
    job_id: str
    duplicate: bool
    result: Result | None          # when waited for


def submit(address: str, task: pb.Task, token: str | None = None, wait: bool = False,
           timeout_s: float = 0.0, deadline_s: float | None = None,
           on_event: Callable[[pb.JobEvent], None] | None = None) -> Submitted:
    """Submit `task`; with `wait`, follow its events to the verdict. Raises grpc.RpcError as the server said."""
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.LarkStub(channel)
        stream = stub.Submit(pb.SubmitRequest(task=task, timeout_seconds=timeout_s), metadata=metadata(token),
                             timeout=deadline_s)
        first = next(stream)
        submitted = Submitted(first.job_id, first.queued.duplicate, None)
        if not wait:
            stream.cancel()            # the job goes on in the server
            return submitted
        for event in _with_first(first, stream):
            if on_event is not None:
                on_event(event)
            if event.WhichOneof("event") == "verdict":
                submitted.result = Result(**json.loads(event.verdict.result_json))
        return submitted


def _with_first(first: pb.JobEvent, rest: Iterator[pb.JobEvent]) -> Iterator[pb.JobEvent]:
    yield first
    yield from rest
