"""The Ray fleet on a real two-node cluster (`ray.cluster_utils.Cluster`, one machine): killing a verify
actor, the solver worker processes, or a whole node mid-batch changes no verdict and loses no task; a
warm rerun is answered by the shared lemma-cache actor; a running task can be cancelled; `lark verify
--workers --address` joins the cluster.

One test function, one cluster: a cluster costs ~15 s to start, and pytest-xdist would start one per
worker for tests spread over workers. Faults are injected when a task completes, at a verify actor that
is busy with another task (references are distinct, so each task's capture is cold and takes seconds).
Nothing asserts on timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from actors.fleet import Fleet  # noqa: E402
from tests.ray_clusters import start_cluster  # noqa: E402
from tests.tiny_tasks import expected, write_task  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("semantics", "lean_pool", "orchestrator", "protos")
# Each verify actor takes two tasks at first. The first task fails at intake at once; the next three capture
# references nobody captured before, which keeps both actors busy for seconds when the first completes.
# The last two reuse the reference that the cancelled task captured.
CANCELLED_ROWS = 101
TASKS = [("broken", 0), ("doubled", 102), ("short_grid", 103), ("copy", 104), ("copy", CANCELLED_ROWS),
         ("doubled", CANCELLED_ROWS)]
POLLS = 6000   # 0.05 s apart: a generous bound for "a verify actor is busy"


def busy_verifiers(fleet: Fleet, count: int) -> list[tuple[int, dict]]:
    """(slot, status) of `count` verify actors that are running a task (waits for them)."""
    for _ in range(POLLS):
        busy = [(slot, s) for slot, s in enumerate(fleet.statuses()) if s["current"]]
        if len(busy) >= count:
            return busy[:count]
        time.sleep(0.05)
    raise AssertionError(f"never {count} busy verify actors")


def run_collecting(fleet: Fleet, manifests: list[Path], faults: list) -> dict[str, tuple]:
    """Run the batch; after the i-th completion inject `faults[i]`. Returns manifest -> (result, failure)."""
    done: dict[str, tuple] = {}

    def on_done(manifest: str, result, failure) -> None:
        assert manifest not in done, f"{manifest} reported twice"
        done[manifest] = (result, failure)
        if len(done) <= len(faults):
            faults[len(done) - 1]()

    fleet.run([str(m) for m in manifests], 600.0, None, on_done)
    return done


def cancel_ends_a_running_task_unknown(fleet: Fleet, root: Path) -> None:
    manifest = str(write_task(root, "cancelled", "copy", rows=CANCELLED_ROWS))
    ref = fleet.verifiers[0].run.remote(manifest, 600.0)
    while fleet.statuses()[0]["current"] != manifest:
        time.sleep(0.05)
    fleet.cancel()
    result = ray.get(ref)
    assert result.verdict == "unknown" and "cancelled" in result.reason


def faults_change_no_verdict(cluster: Cluster, fleet: Fleet, manifests: list[Path]) -> None:
    def kill_two_actors() -> None:
        (_, first), (slot, _) = busy_verifiers(fleet, 2)
        os.kill(first["pid"], signal.SIGKILL)                      # Ray restarts it and retries its tasks
        ray.kill(fleet.verifiers[slot], no_restart=True)           # the fleet replaces it and requeues

    def kill_solver_workers_and_a_node() -> None:
        pids = [w["pid"] for health in fleet.checker_health() for w in health["workers"]]
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        [(_, busy)] = busy_verifiers(fleet, 1)
        [node] = [n for n in cluster.worker_nodes if n.node_id == busy["node"]]
        cluster.remove_node(node)

    done = run_collecting(fleet, manifests, [kill_two_actors, kill_solver_workers_and_a_node])
    assert sorted(done) == sorted(map(str, manifests))
    for manifest, (kind, _) in zip(manifests, TASKS, strict=True):
        result, failure = done[str(manifest)]
        assert failure is None, failure
        assert result.verdict == expected(kind), (manifest, result.to_json())


def warm_rerun_hits_the_shared_cache(fleet: Fleet, manifests: list[Path]) -> None:
    done = run_collecting(fleet, manifests, [])
    for manifest, (kind, _) in zip(manifests, TASKS, strict=True):
        result, _ = done[str(manifest)]
        assert result.verdict == expected(kind)
        if kind != "broken":
            assert result.stats["cache_hits"] == result.stats["obligations"] > 0, result.stats


def verify_workers_joins_the_cluster(cluster: Cluster, manifest: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                           str(manifest), "--json", "--workers", "2", "--address", cluster.address],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    result = json.loads(proc.stdout)
    assert (proc.returncode, result["verdict"]) == (1, "refuted"), proc.stderr
    assert result["findings"][0]["witness"]["element_index"] >= 0


def test_ray_is_imported_only_in_actors():
    """STYLE 5: the trusted core and the orchestrator are plain Python; Ray stays behind `actors/`."""
    offenders = [str(path.relative_to(REPO)) for package in PACKAGES for path in (REPO / package).rglob("*.py")
                 if any(line.lstrip().startswith(("import ray", "from ray"))
                        for line in path.read_text(encoding="utf-8").splitlines())]
    assert offenders == []


def test_on_a_two_node_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("LARK_CACHE_DIR", str(tmp_path / "cache"))   # inherited by the nodes started below
    cluster = start_cluster(head_cpus=0, nodes=[2, 2])
    try:
        ray.init(address=cluster.address, log_to_driver=False)

        fleet = Fleet(verifiers=2)
        cancel_ends_a_running_task_unknown(fleet, tmp_path)
        manifests = [write_task(tmp_path, f"{kind}_{i}", kind, rows) for i, (kind, rows) in enumerate(TASKS)]
        faults_change_no_verdict(cluster, fleet, manifests)
        warm_rerun_hits_the_shared_cache(fleet, manifests)
        for actor in fleet.verifiers:    # free the CPUs of the one node left for the next driver's fleet
            ray.kill(actor)
        verify_workers_joins_the_cluster(cluster, manifests[1])
    finally:
        ray.shutdown()
        cluster.shutdown()
