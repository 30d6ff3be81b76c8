"""The service's Ray side: `lark serve --address` fans every job's obligations out to checker actors.

The server keeps running each job in one of its own worker processes (`orchestrator.workers`): that is where
its events stream from and where a cancel or a timeout stops it. With a cluster configured, the job's
checker is the batch's: a lemma-cache actor and `checkers` checker actors (pools of warm solver processes,
`actors.checker`) on the cluster, started once by the server under names in a namespace of their own, and
looked up by name from each worker process. Ray stays in this package; without an address the server is
in-process as before.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import ray

from actors.cache import HEAD_NODE, ActorLemmaStore, CacheActor
from actors.checker import CheckerActor, RemoteChecker
from actors.cluster import forwarded_env
from lean_pool.budget import Budget
from lean_pool.checker import Checker
from lean_pool.pool import PoolConfig
from lean_pool.stack import assemble

NAMESPACE = "lark-serve"


@dataclass(frozen=True)
class ClusterSpec:
    """Where a server's checker actors live: the cluster, their name prefix, how many."""

    address: str
    prefix: str
    checkers: int


def _connect(address: str) -> None:
    if not ray.is_initialized():
        ray.init(address=address, namespace=NAMESPACE, runtime_env=forwarded_env(), log_to_driver=False)


@dataclass(frozen=True)
class ServiceFleet:
    """The started actors: the server holds their handles (an actor no handle refers to is collected)."""

    spec: ClusterSpec
    handles: tuple


def start_fleet(address: str, checkers: int) -> ServiceFleet:
    """Connect the server to the cluster and start its cache and checker actors (they live as long as the
    server holds the returned handles and its connection)."""
    _connect(address)
    spec = ClusterSpec(address, f"lark-serve-{uuid.uuid4().hex[:12]}", checkers)
    cache = CacheActor.options(name=f"{spec.prefix}-cache", namespace=NAMESPACE, resources=HEAD_NODE).remote()
    actors = [CheckerActor.options(name=f"{spec.prefix}-checker-{i}", namespace=NAMESPACE,
                                   scheduling_strategy="SPREAD").remote(PoolConfig()) for i in range(checkers)]
    ray.get([cache.get.remote("lark-serve: started"), *(a.health.remote() for a in actors)])  # up before any job
    return ServiceFleet(spec, (cache, *actors))


def fleet_checker(spec: ClusterSpec, budget: Budget) -> Checker:
    """A worker process's checker for one job: the fleet's checker actors behind its lemma-cache actor."""
    _connect(spec.address)
    cache = ray.get_actor(f"{spec.prefix}-cache", namespace=NAMESPACE)
    actors = [ray.get_actor(f"{spec.prefix}-checker-{i}", namespace=NAMESPACE) for i in range(spec.checkers)]
    return assemble(RemoteChecker(actors), ActorLemmaStore(cache), budget)


def checker_stats(spec: ClusterSpec) -> list[dict]:
    """Each checker actor's pool statistics (what it solved), for tests and operators."""
    _connect(spec.address)
    return ray.get([ray.get_actor(f"{spec.prefix}-checker-{i}", namespace=NAMESPACE).health.remote()
                    for i in range(spec.checkers)])
