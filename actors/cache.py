"""The lemma cache shared by a whole cluster: one actor on the head node owning the `diskcache`.

The head node is where the disk outlives the (possibly autoscaled) workers. Every verify actor reads and
writes through `ActorLemmaStore`; the cache is an optimization and untrusted (DESIGN §3), so an actor that
cannot be reached is a miss, never an error.
"""

from __future__ import annotations

import ray
from ray.exceptions import RayError

from lean_pool.cache import DiskLemmaStore

CACHE_TIMEOUT_S = 30.0
HEAD_NODE = {"node:__internal_head__": 0.001}   # Ray's built-in resource of the head node


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=2)
class CacheActor:
    def __init__(self):
        self.store = DiskLemmaStore()     # $LARK_CACHE_DIR/lemmas of the head node

    def get(self, key: str) -> dict | None:
        return self.store.get(key)

    def put(self, key: str, entry: dict) -> None:
        self.store.put(key, entry)


def start_cache(name: str):
    return CacheActor.options(name=name, resources=HEAD_NODE).remote()


class ActorLemmaStore:
    """A `lean_pool.cache.LemmaStore` over the cache actor."""

    def __init__(self, actor):
        self.actor = actor

    def get(self, key: str) -> dict | None:
        try:
            return ray.get(self.actor.get.remote(key), timeout=CACHE_TIMEOUT_S)
        except RayError:   # includes GetTimeoutError
            return None

    def put(self, key: str, entry: dict) -> None:
        try:
            ray.get(self.actor.put.remote(key, entry), timeout=CACHE_TIMEOUT_S)
        except RayError:   # includes GetTimeoutError
            pass
