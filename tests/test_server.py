"""`lark serve` over loopback: streamed verdicts (verified, refuted, error), bad input, cancel, deadlines,
duplicates, health and reflection, size limits, the bearer token off loopback, and a server killed with
SIGKILL mid-job that finishes the job after a restart.

Tasks are small examples; a task that must still be running when something happens to it has a reference
that sleeps in `get_inputs` (its capture takes that long), made unique per run so no cache answers it.
Nothing asserts on timing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from lean_pool.cancel import CancelToken
from orchestrator.client import metadata, read_task
from orchestrator.job import run_verify
from orchestrator.server import pb, pb_grpc, serve

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
STREAM_DEADLINE_S = 600      # a bound for a whole stream, never reached by a passing test
POLLS = 600


def copy_task(tmp_path: Path, example: str, name: str | None = None) -> Path:
    folder = tmp_path / (name or example)
    shutil.copytree(EXAMPLES / example, folder)
    return folder


def sleepy_task(tmp_path: Path, seconds: float) -> Path:
    """relu_64x64 with a reference that sleeps `seconds` in get_inputs, unique to this run."""
    folder = copy_task(tmp_path, "relu_64x64", f"sleepy_{uuid.uuid4().hex[:8]}")
    ref = (folder / "ref.py").read_text()
    ref = ref.replace("def get_inputs():", f"def get_inputs():\n    import time\n    time.sleep({seconds})  # "
                                           f"{uuid.uuid4().hex}", 1)
    (folder / "ref.py").write_text(ref)
    return folder


def events(stub, folder: Path, **request) -> list:
    return list(stub.Submit(pb.SubmitRequest(task=read_task(folder), **request), timeout=STREAM_DEADLINE_S))


def kinds(stream: list) -> list[str]:
    return [e.WhichOneof("event") for e in stream]


def result_of(stream: list) -> dict:
    assert kinds(stream)[-1] == "verdict", kinds(stream)
    return json.loads(stream[-1].verdict.result_json)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = serve("127.0.0.1", 0, workers=2, db=tmp_path_factory.mktemp("db") / "jobs.db",
                    max_request_bytes=1024 * 1024)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield pb_grpc.LarkStub(channel)


def test_a_verified_task_streams_queued_stages_and_its_verdict(stub):
    stream = events(stub, EXAMPLES / "relu_64x64")
    assert kinds(stream)[0] == "queued" and "stage" in kinds(stream)
    assert [e.seq for e in stream] == list(range(len(stream)))
    assert {e.stage.stage for e in stream if e.WhichOneof("event") == "stage"} >= {"intake", "equivalence"}
    result = result_of(stream)
    assert result["verdict"] == "verified" and set(result) >= {"name", "properties", "findings", "stats"}
    assert stream[-1].verdict.verdict == "verified"


def test_a_new_reference_is_captured_by_the_workers_warm_capture_worker(stub, tmp_path):
    """Each worker keeps a serving capture worker (issue 19 item 9). The reference reads its own command line
    (reading is free in the sandbox): relu when a serving worker runs it, x * 2 when a one-shot worker does,
    so the relu kernel verifies only through the warm one. Unique to this run, so no cache answers it."""
    folder = copy_task(tmp_path, "relu_64x64", f"served_{uuid.uuid4().hex[:8]}")
    ref = (folder / "ref.py").read_text().replace("return torch.relu(x)", "return torch.relu(x) if SERVED else x * 2")
    ref += f"\n\nSERVED = b'--serve' in open('/proc/self/cmdline', 'rb').read()  # {uuid.uuid4().hex}\n"
    (folder / "ref.py").write_text(ref)
    assert result_of(events(stub, folder))["verdict"] == "verified"


def test_a_refuted_task_streams_its_counterexample_before_the_verdict(stub):
    stream = events(stub, EXAMPLES / "grid_too_small")
    assert result_of(stream)["verdict"] == "refuted"
    counterexamples = [e.counterexample for e in stream if e.WhichOneof("event") == "counterexample"]
    assert counterexamples and counterexamples[0].property == "equivalence"
    assert isinstance(json.loads(counterexamples[0].witness_json)["element_index"], int)


def test_a_reference_that_fails_is_an_error_verdict(stub, tmp_path):
    folder = copy_task(tmp_path, "relu_64x64", "broken_reference")
    (folder / "ref.py").write_text(f"raise RuntimeError('no reference here {uuid.uuid4().hex}')\n")
    result = result_of(events(stub, folder))
    assert result["verdict"] == "error" and "no reference here" in result["reason"]


def test_bad_input_is_invalid_argument_naming_the_field(stub, tmp_path):
    folder = copy_task(tmp_path, "relu_64x64")
    (folder / "lark.toml").write_text((folder / "lark.toml").read_text().replace('entry = "relu_kernel"',
                                                                                'entry = 5'))
    with pytest.raises(grpc.RpcError) as raised:
        events(stub, folder)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith("kernel.entry")
    task = read_task(EXAMPLES / "relu_64x64")
    del task.files["ref.py"]
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Submit(pb.SubmitRequest(task=task), timeout=STREAM_DEADLINE_S))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith("reference.source")
    for name in ("../escape.py", "/etc/escape.py", "."):
        task = read_task(EXAMPLES / "relu_64x64")
        task.files[name] = b"x"
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.Submit(pb.SubmitRequest(task=task), timeout=STREAM_DEADLINE_S))
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and raised.value.details().startswith("files")


def test_a_request_over_the_size_limit_is_refused(stub):
    task = read_task(EXAMPLES / "relu_64x64")
    task.files["padding.bin"] = b"\0" * (2 * 1024 * 1024)
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Submit(pb.SubmitRequest(task=task), timeout=STREAM_DEADLINE_S))
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_duplicate_submission_is_answered_by_the_finished_job(stub, server, tmp_path):
    folder = copy_task(tmp_path, "ptx_copy")
    first = events(stub, folder)
    runs = server.pool.runs
    second = events(stub, folder)
    assert first[0].job_id == second[0].job_id
    assert not first[0].queued.duplicate and second[0].queued.duplicate
    assert result_of(second) == result_of(first)
    assert server.pool.runs == runs                       # no new verification
    assert stub.GetJob(pb.JobRequest(job_id=first[0].job_id)).runs == 1
    names = [j.name for j in stub.ListJobs(pb.ListJobsRequest()).jobs]
    assert names.count("ptx_copy") == 1


def test_a_running_job_is_cancelled_and_a_deadline_ends_only_the_stream(stub, tmp_path):
    stream = stub.Submit(pb.SubmitRequest(task=read_task(sleepy_task(tmp_path, 20))), timeout=STREAM_DEADLINE_S)
    job_id = next(stream).job_id
    assert next(stream).stage.stage == "intake"          # the job is running, capturing the sleepy reference
    stream.cancel()
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Watch(pb.JobRequest(job_id=job_id), timeout=1.0))
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert stub.GetJob(pb.JobRequest(job_id=job_id)).state == "running"
    stub.Cancel(pb.JobRequest(job_id=job_id))
    result = result_of(list(stub.Watch(pb.JobRequest(job_id=job_id), timeout=STREAM_DEADLINE_S)))
    assert result["verdict"] == "unknown" and result["reason"] == "cancelled"
    assert stub.GetJob(pb.JobRequest(job_id=job_id)).state == "cancelled"


def test_the_job_runner_stops_a_cancelled_job():
    token = CancelToken()
    token.cancel()
    seen = []
    result = run_verify(EXAMPLES / "relu_64x64" / "lark.toml", 600.0, seen.append, cancel=token)
    assert result.verdict == "unknown" and result.reason == "cancelled"
    assert [e.kind for e in seen] == ["verdict"]


def test_health_and_reflection_answer(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        for service in ("", "lark.v1.Lark"):
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                                timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
        listed, described = reflect.ServerReflectionInfo(iter([
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol="lark.v1.Lark")]), timeout=10)
    names = {s.name for s in listed.list_services_response.service}
    assert {"lark.v1.Lark", "grpc.health.v1.Health"} <= names
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto.FromString(described.file_descriptor_response.file_descriptor_proto[0])
    methods = {m.name for s in proto.service for m in s.method}
    assert {"Submit", "GetJob", "ListJobs", "Cancel", "CheckCertificate"} <= methods


def test_a_non_loopback_bind_needs_the_token(tmp_path):
    with pytest.raises(ValueError, match="token"):
        serve("127.0.0.2", 0, db=tmp_path / "none.db")
    running = serve("127.0.0.2", 0, db=tmp_path / "jobs.db", token="s3cret")
    try:
        with grpc.insecure_channel(f"127.0.0.2:{running.port}") as channel:
            stub = pb_grpc.LarkStub(channel)
            with pytest.raises(grpc.RpcError) as raised:
                stub.ListJobs(pb.ListJobsRequest(), timeout=10)
            assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as raised:
                stub.ListJobs(pb.ListJobsRequest(), metadata=metadata("wrong"), timeout=10)
            assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert stub.ListJobs(pb.ListJobsRequest(), metadata=metadata("s3cret"), timeout=10).jobs == []
            with pytest.raises(grpc.RpcError) as raised:
                list(stub.Submit(pb.SubmitRequest(task=read_task(EXAMPLES / "relu_64x64")), timeout=10))
            assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        running.stop()


def start_server(db: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`lark serve --port 0` in a subprocess; its address, from the line it prints once listening."""
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", "from orchestrator.cli import main; main()", "serve", "--port",
                                 "0", "--db", str(db)], env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=err)
    for _ in range(POLLS):
        text = log.read_text()
        if "listening on " in text:
            return proc, text.split("listening on ")[1].split()[0]
        assert proc.poll() is None, text
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the server never listened: {log.read_text()}")


def test_a_server_killed_mid_job_finishes_it_after_a_restart(tmp_path):
    db = tmp_path / "jobs.db"
    proc, address = start_server(db, tmp_path / "serve.log")
    try:
        with grpc.insecure_channel(address) as channel:
            stream = pb_grpc.LarkStub(channel).Submit(pb.SubmitRequest(task=read_task(sleepy_task(tmp_path, 5))),
                                                      timeout=STREAM_DEADLINE_S)
            job_id = next(stream).job_id
            assert next(stream).stage.stage == "intake"     # running: capturing the sleepy reference
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    finally:
        proc.kill()
    proc, address = start_server(db, tmp_path / "serve.log")
    try:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.LarkStub(channel)
            result = result_of(list(stub.Watch(pb.JobRequest(job_id=job_id), timeout=STREAM_DEADLINE_S)))
            job = stub.GetJob(pb.JobRequest(job_id=job_id))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert result["verdict"] == "verified" and job.state == "done" and job.runs == 2


def test_a_certificate_is_checked_against_the_task_sent_with_it(stub, tmp_path):
    folder = copy_task(tmp_path, "relu_64x64")
    assert run_verify(folder / "lark.toml", 600.0, certificate=tmp_path / "proof.json").verdict == "verified"
    document = (tmp_path / "proof.json").read_bytes()
    answer = stub.CheckCertificate(pb.CheckCertificateRequest(task=read_task(folder), document=document),
                                   timeout=STREAM_DEADLINE_S)
    assert answer.holds and answer.status == 0, answer.text
    tampered = json.loads(document)
    tampered["proof"]["nodes"][0]["rule"] = "trust_me"
    answer = stub.CheckCertificate(pb.CheckCertificateRequest(task=read_task(folder),
                                                              document=json.dumps(tampered).encode()),
                                   timeout=STREAM_DEADLINE_S)
    assert not answer.holds and answer.status == 1 and "not a rule of the kernel" in answer.text
    answer = stub.CheckCertificate(pb.CheckCertificateRequest(task=read_task(folder), document=b"not json"),
                                   timeout=STREAM_DEADLINE_S)
    assert answer.status == 3


def test_lark_submit_exits_as_lark_verify(server, tmp_path):
    from click.testing import CliRunner

    from orchestrator.cli import main

    address = f"127.0.0.1:{server.port}"
    waited = CliRunner().invoke(main, ["submit", str(EXAMPLES / "grid_too_small"), "--server", address, "--wait",
                                       "--json"])
    assert waited.exit_code == 1 and json.loads(waited.output)["verdict"] == "refuted"
    queued = CliRunner().invoke(main, ["submit", str(EXAMPLES / "grid_too_small"), "--server", address, "--json"])
    assert queued.exit_code == 0 and json.loads(queued.output)["duplicate"] is True
    folder = copy_task(tmp_path, "relu_64x64")
    (folder / "lark.toml").write_text((folder / "lark.toml").read_text().replace("[launch]", "[launch]\nwarp = 1"))
    bad = CliRunner().invoke(main, ["submit", str(folder), "--server", address, "--wait", "--json"])
    assert bad.exit_code == 3 and json.loads(bad.output)["error"] == "INVALID_ARGUMENT"


def test_with_a_cluster_the_jobs_obligations_fan_out_to_its_checker_actors(tmp_path, monkeypatch):
    """`lark serve --address`: on a two-node `ray.cluster_utils.Cluster`, a submitted job still streams its
    stages and verdict from the server, and its obligations are solved by the cluster's checker actors."""
    ray = pytest.importorskip("ray")
    from actors.service import checker_stats
    from tests.ray_clusters import start_cluster

    monkeypatch.setenv("LARK_CACHE_DIR", str(tmp_path / "cache"))   # no lemma of an earlier test answers
    cluster = start_cluster(head_cpus=1, nodes=[1])
    running = None
    try:
        running = serve("127.0.0.1", 0, workers=1, db=tmp_path / "jobs.db", address=cluster.address, checkers=2)
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            task = copy_task(tmp_path, "relu_64x64", f"relu_{uuid.uuid4().hex[:8]}")
            stream = events(pb_grpc.LarkStub(channel), task)
        assert "stage" in kinds(stream) and result_of(stream)["verdict"] == "verified", result_of(stream)["reason"]
        solved = sum(h["stats"].get("solved", 0) for h in checker_stats(running.pool.cluster))
        assert solved >= result_of(stream)["stats"]["obligations"] - result_of(stream)["stats"]["cache_hits"] > 0
    finally:
        if running is not None:
            running.stop()
        ray.shutdown()
        cluster.shutdown()
