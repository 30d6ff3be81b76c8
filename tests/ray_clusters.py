"""Multi-node Ray clusters for tests (`ray.cluster_utils.Cluster`), started again when the machine is too
loaded for Ray's own start-up wait.

Ray waits a fixed 30 s for a new node's raylet to register and a fixed time for the head's GCS server to
write its port file (ray/_private/node.py); on 2 cores, while another test's local Ray verifies the
examples, a node can miss either window. That is the environment, not
LARK: the node is started once more (the partial cluster shut down first), at most `ATTEMPTS` times, and a
third miss fails the test as before.
"""

from __future__ import annotations

from ray.cluster_utils import Cluster

ATTEMPTS = 3
STARTUP_FAILURES = ("timed out during startup", "Timed out waiting for file")


def start_cluster(head_cpus: int, nodes: list[int]) -> Cluster:
    """A head with `head_cpus` CPUs and one node per entry of `nodes` (its CPUs), all registered."""
    for attempt in range(1, ATTEMPTS + 1):
        cluster = None
        try:
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": head_cpus, "include_dashboard": False})
            for cpus in nodes:
                cluster.add_node(num_cpus=cpus)
            cluster.wait_for_nodes()
            return cluster
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception or RuntimeError for a missed window
            if cluster is not None:
                cluster.shutdown()
            if not any(failure in str(exc) for failure in STARTUP_FAILURES) or attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")
