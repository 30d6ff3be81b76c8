"""`lark serve`: the gRPC service of DESIGN §8 over the job store and the worker pool.

Submit validates the task at once (the manifest and the files it names: `INVALID_ARGUMENT` naming the
field, as `lark verify` exits 3), stores the job, and streams its events from the store until the verdict;
Watch streams an existing job's. A stream ends when the client goes away or its deadline passes; the job
does not (it is persisted, and can be followed again). Requests are limited in size (`max_request_bytes`).
A bearer token (`authorization: Bearer T` metadata) is required on every call but health checks when one is
configured, and one must be configured to bind anything but a loopback address. The standard health and
reflection services are served beside LARK's.
"""

from __future__ import annotations

import hmac
import json
import tempfile
import threading
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

import protos
from orchestrator import metrics
from orchestrator.cert_schema import SOLVERS
from orchestrator.checking import run_check
from orchestrator.job import COUNTEREXAMPLE, GOAL, MANIFEST, QUEUED, STAGE, VERDICT, Sources
from orchestrator.jobs_db import JobRow, JobStore, Request
from orchestrator.manifest import IntakeError, load_task
from orchestrator.workers import WorkerPool

pb, pb_grpc = protos.load()
SERVICE = pb.DESCRIPTOR.services_by_name["Lark"].full_name
LOOPBACK = ("127.0.0.1", "::1", "[::1]", "localhost")
DEFAULT_TIMEOUT_S = 600.0
MAX_REQUEST_BYTES = 32 * 1024 * 1024
WAIT_S = 0.5          # how often a stream looks whether its client is still there
HEALTH_PREFIX = "/grpc.health.v1.Health/"
# `lark check` runs in the server's own process, in z3's one main context: one check at a time.
_CHECKING = threading.Lock()

# A stored event (kind, data) as the fields of a JobEvent.
EVENT_FIELDS = {
    QUEUED: lambda d: {"queued": pb.Queued(duplicate=d.get("duplicate", False))},
    STAGE: lambda d: {"stage": pb.StageStarted(stage=d["stage"])},
    GOAL: lambda d: {"goal": pb.GoalClosed(kind=d["kind"], key=d["key"], proved=d["proved"],
                                           strategy=d["strategy"] or "", reason=d["reason"] or "")},
    COUNTEREXAMPLE: lambda d: {"counterexample": pb.Counterexample(property=d["property"], message=d["message"],
                                                                   witness_json=json.dumps(d["witness"]))},
    VERDICT: lambda d: {"verdict": pb.Verdict(verdict=d["result"]["verdict"], result_json=json.dumps(d["result"]))},
}


def is_loopback(host: str) -> bool:
    return host in LOOPBACK


def job_message(job: JobRow) -> pb.Job:
    result = job.result or {}
    return pb.Job(job_id=job.id, state=job.state, name=job.name, verdict=result.get("verdict", ""),
                  result_json=json.dumps(result) if result else "", submitted_at=job.submitted_at,
                  finished_at=job.finished_at or 0.0, runs=job.runs)


def sources_of(task: pb.Task) -> Sources:
    return Sources(task.name or "task", task.manifest, dict(task.files))


def validate(sources: Sources) -> None:
    """What intake can say before any job exists: the manifest and the files it names (raises IntakeError)."""
    if not sources.manifest.strip():
        raise IntakeError("manifest", "empty: send the text of lark.toml")
    with tempfile.TemporaryDirectory(prefix="lark-intake-") as root:
        load_task(sources.write(Path(root)))


class Servicer(pb_grpc.LarkServicer):
    def __init__(self, store: JobStore, pool: WorkerPool, default_timeout_s: float = DEFAULT_TIMEOUT_S):
        self.store = store
        self.pool = pool
        self.default_timeout_s = default_timeout_s

    def Submit(self, request, context):
        sources = sources_of(request.task)
        if request.timeout_seconds < 0 or request.solver_seconds < 0:
            field = "timeout_seconds" if request.timeout_seconds < 0 else "solver_seconds"
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{field}: must not be negative")
        try:
            validate(sources)
        except IntakeError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        job, duplicate = self.store.submit(Request(sources, request.timeout_seconds or self.default_timeout_s,
                                                   request.solver_seconds or None))
        if not duplicate:
            self.pool.notify()
        yield from self._stream(job.id, context, duplicate)

    def Watch(self, request, context):
        self._job(request.job_id, context)
        yield from self._stream(request.job_id, context, False)

    def GetJob(self, request, context):
        return job_message(self._job(request.job_id, context))

    def ListJobs(self, request, context):
        if request.state and request.state not in ("queued", "running", "done", "cancelled"):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"state: no such state {request.state!r}")
        jobs = self.store.list(request.state or None, request.limit or 100)
        return pb.ListJobsResponse(jobs=[job_message(j) for j in jobs])

    def Cancel(self, request, context):
        self._job(request.job_id, context)
        job = self.store.cancel(request.job_id)
        if job.state == "running":
            self.pool.cancel(job.id)
        return job_message(job)

    def CheckCertificate(self, request, context):
        solver = request.solver or "z3"
        if solver not in SOLVERS:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"solver: one of {sorted(SOLVERS)}, not {solver!r}")
        sources = sources_of(request.task)
        with tempfile.TemporaryDirectory(prefix="lark-check-") as root:
            try:
                manifest = sources.write(Path(root))
            except IntakeError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            document = manifest.parent / "lark-document.json"
            document.write_bytes(_located(request.document))
            with _CHECKING:
                status, text = run_check(document, solver)
        return pb.CheckCertificateResponse(holds=status == 0, status=status, text=text)

    def _job(self, job_id: str, context) -> JobRow:
        job = self.store.get(job_id)
        if job is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"job_id: no job {job_id!r}")
        return job

    def _stream(self, job_id: str, context, duplicate: bool):
        """The job's events from the first, then as they come, until its verdict or the client is gone."""
        last = -1
        while context.is_active():
            version = self.store.version
            for seq, kind, data in self.store.events(job_id, last):
                last = seq
                if kind == QUEUED:
                    data = {**data, "duplicate": duplicate}
                yield pb.JobEvent(job_id=job_id, seq=seq, **EVENT_FIELDS[kind](data))
                if kind == VERDICT:
                    return
            self.store.wait_change(version, WAIT_S)


def _located(document: bytes) -> bytes:
    """A certificate or witness names its manifest relative to itself; here the task sits beside it."""
    try:
        parsed = json.loads(document)
    except (ValueError, UnicodeDecodeError):
        return document                      # `lark check` says why it is unreadable
    if isinstance(parsed, dict) and "manifest" in parsed:
        parsed["manifest"] = MANIFEST
    return json.dumps(parsed).encode()


class BearerAuth(grpc.ServerInterceptor):
    """Every call but a health check carries `authorization: Bearer <token>`, or is refused UNAUTHENTICATED."""

    def __init__(self, token: str):
        self.expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation, details):
        handler = continuation(details)
        if handler is None or details.method.startswith(HEALTH_PREFIX):
            return handler
        given = dict(details.invocation_metadata).get("authorization", "")
        if hmac.compare_digest(given.encode(), self.expected):
            return handler
        return _refusal(handler)


def _refusal(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same shape as `handler` that refuses the call."""
    def deny(_request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required (authorization metadata)")

    shapes = {(False, False): grpc.unary_unary_rpc_method_handler, (False, True): grpc.unary_stream_rpc_method_handler,
              (True, False): grpc.stream_unary_rpc_method_handler, (True, True): grpc.stream_stream_rpc_method_handler}
    make = shapes[(handler.request_streaming, handler.response_streaming)]
    return make(deny, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)


@dataclass
class Running:
    """A started server: its port, and how to stop it."""
    server: grpc.Server
    port: int
    store: JobStore
    pool: WorkerPool
    fleet: object = None     # `actors.service.ServiceFleet` with --address: holding it keeps the actors alive

    def stop(self, grace_s: float = 2.0) -> None:
        self.server.stop(grace_s).wait()
        self.pool.stop()
        self.store.close()


def serve(host: str = "127.0.0.1", port: int = 50051, workers: int = 1, db: Path = Path(".lark/jobs.db"),
          token: str | None = None, max_request_bytes: int = MAX_REQUEST_BYTES,
          default_timeout_s: float = DEFAULT_TIMEOUT_S, address: str | None = None,
          checkers: int = 2) -> Running:
    """Start the service (returns at once; `Running.server.wait_for_termination()` to block). Jobs a killed
    server left behind are resumed first. Refuses a non-loopback bind without a token. With a Ray `address`,
    every job's obligations fan out to `checkers` checker actors on that cluster (`actors.service`), the
    batch's machinery; without one, they are solved in the worker processes."""
    if not is_loopback(host) and not token:
        raise ValueError(f"binding {host} (not loopback) needs a bearer token (--token or $LARK_TOKEN)")
    store = JobStore(db)
    store.recover()
    metrics.watch_queue(store.queued)
    fleet = None
    if address:
        from actors.service import start_fleet

        fleet = start_fleet(address, checkers)
    pool = WorkerPool(store, workers, fleet.spec if fleet else None)
    options = [("grpc.max_receive_message_length", max_request_bytes),
               ("grpc.max_send_message_length", max_request_bytes)]
    interceptors = [BearerAuth(token)] if token else []
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="lark-rpc"),
                         interceptors=interceptors, options=options)
    pb_grpc.add_LarkServicer_to_server(Servicer(store, pool, default_timeout_s), server)
    checks = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checks, server)
    reflection.enable_server_reflection((SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
    bound = server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot bind {host}:{port}")
    pool.start()
    server.start()
    for name in ("", SERVICE):
        checks.set(name, health_pb2.HealthCheckResponse.SERVING)
    return Running(server, bound, store, pool, fleet)
