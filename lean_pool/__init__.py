"""Checkers behind one interface (`checker.Checker`) and the wrappers that add features to any of them.

Backends: `checker.Z3Checker` (in-process), `pool.PoolChecker` (warm z3 worker processes), `cvc5_checker`.
Wrappers, assembled in `stack.assemble`: `budget` (per-job budgets, cancellation), `cache` (the lemma
cache, keyed by `canonical`), `local_model` (in-process models for refutations from elsewhere). Free of
Ray, gRPC and CLI code (STYLE 5): `actors/` wraps the pool for a cluster.
"""
