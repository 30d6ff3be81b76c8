"""Joining or starting the Ray instance a batch runs on (DESIGN §4: local by default, RAY_ADDRESS joins)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import ray

FORWARDED_ENV = ("LARK_CACHE_DIR",)   # where the frontends' PTX and the lemma cache live


@contextmanager
def ray_session(workers: int | None = None, address: str | None = None) -> Iterator[int]:
    """Connect, yield how many verify actors to run, disconnect. With no address (argument or RAY_ADDRESS)
    a private local instance with `workers` CPUs is started and stopped with the session. A process that
    is already connected (a test's cluster, a library caller) keeps its connection."""
    if ray.is_initialized():
        yield workers or _cpus()
        return
    address = address or os.environ.get("RAY_ADDRESS")
    runtime_env = forwarded_env()
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
    else:
        # address="local": a new instance even when another cluster runs on this machine (a plain
        # ray.init() would join the one started last).
        ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                 runtime_env=runtime_env, log_to_driver=False)
    try:
        yield workers or _cpus()
    finally:
        ray.shutdown()


def forwarded_env() -> dict | None:
    """The runtime environment that carries this process's FORWARDED_ENV to the cluster's workers."""
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    return {"env_vars": env} if env else None


def _cpus() -> int:
    return max(int(ray.cluster_resources().get("CPU", 1)), 1)
