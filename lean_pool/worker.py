"""A warm solver process: one JSON request per line on stdin, one JSON answer per line on stdout.

Started by `lean_pool.process.WorkerProcess` in its own session. It limits its own address space (here,
not in a `preexec_fn`, which is unsafe when the parent has threads, as a Ray actor does) and announces
itself with a `ready` line. Each request is solved in a fresh z3 solver with
the pool's seed and work limit (STYLE 9). The pool enforces the obligation's timeout by killing this
process; the z3 timeout is only a backstop for an orphan, which exits at the end of its stdin once its
parent is gone (a `kill -9`ed actor cannot stop its workers).

Request: {"id": n, "smt2": text, "timeout_s": t}. The text declares `w!name` constants equal to the
witness terms (`Obligation.smt2_with_witnesses`); a sat answer reports their values under `name`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import z3

from lean_pool.checker import PROVED, REFUTED, UNKNOWN, WITNESS_PREFIX, model_value
from lean_pool.wire import encode_value

BACKSTOP_FACTOR = 4


def _witness_terms(solver: z3.Solver) -> dict[str, z3.ExprRef]:
    terms = {}
    for assertion in solver.assertions():
        if not z3.is_eq(assertion):
            continue
        for side in assertion.children():
            name = side.decl().name() if z3.is_const(side) else ""
            if name.startswith(WITNESS_PREFIX):
                terms[name[len(WITNESS_PREFIX):]] = side
    return terms


def solve(text: str, timeout_s: float, seed: int, rlimit: int) -> dict:
    start = time.monotonic()
    solver = z3.Solver()
    solver.set("timeout", max(int(timeout_s * 1000 * BACKSTOP_FACTOR), 1000))
    solver.set("rlimit", rlimit)
    solver.set("random_seed", seed)
    try:
        solver.from_string(text)
        result = solver.check()
    except (z3.Z3Exception, MemoryError) as exc:
        return {"status": UNKNOWN, "seconds": time.monotonic() - start, "model": None, "reason": f"z3: {exc}"}
    seconds = time.monotonic() - start
    if result == z3.unsat:
        return {"status": PROVED, "seconds": seconds, "model": None, "reason": None}
    if result == z3.sat:
        model = solver.model()
        values = {name: encode_value(model_value(model.eval(term, model_completion=True)))
                  for name, term in _witness_terms(solver).items()}
        return {"status": REFUTED, "seconds": seconds, "model": values, "reason": None}
    return {"status": UNKNOWN, "seconds": seconds, "model": None, "reason": f"z3: {solver.reason_unknown()}"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lean_pool.worker")
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rlimit", type=int, default=0)
    args = parser.parse_args(argv)
    if args.memory_mb:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        answer = solve(request["smt2"], request["timeout_s"], args.seed, args.rlimit)
        out.write(json.dumps({"id": request["id"], **answer}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
