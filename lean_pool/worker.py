"""A warm solver process: one JSON request per line on stdin, one JSON answer per line on stdout.

Started by `lean_pool.process.WorkerProcess` in its own session. It limits its own address space (here,
not in a `preexec_fn`, which is unsafe when the parent has threads, as a Ray actor does) and announces
itself with a `ready` line. Each obligation is solved in a fresh z3 context with the seed and work limit
of every backend (`lean_pool.fresh`, STYLE 9), so its answer depends on its text alone, not on what this
worker solved before. The pool enforces the obligation's timeout by killing this process; the z3 timeout
is only a backstop for an orphan, which exits at the end of its stdin once its parent is gone (a
`kill -9`ed actor cannot stop its workers).

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

from lean_pool.checker import DEFAULT_RLIMIT, DEFAULT_SEED, PROVED, REFUTED, WITNESS_PREFIX, model_value
from lean_pool.fresh import fresh_solver
from lean_pool.wire import answer, encode_value, unknown_answer

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


def solve(text: str, timeout_s: float) -> dict:
    start = time.monotonic()
    try:
        solver = fresh_solver(text, max(timeout_s * BACKSTOP_FACTOR, 1.0), DEFAULT_SEED, DEFAULT_RLIMIT)
        result = solver.check()
    except (z3.Z3Exception, MemoryError) as exc:
        return unknown_answer(f"z3: {exc}", time.monotonic() - start)
    seconds = time.monotonic() - start
    if result == z3.unsat:
        return answer(PROVED, seconds)
    if result == z3.sat:
        model = solver.model()
        values = {name: encode_value(model_value(model.eval(term, model_completion=True)))
                  for name, term in _witness_terms(solver).items()}
        return answer(REFUTED, seconds, values)
    return unknown_answer(f"z3: {solver.reason_unknown()}", seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lean_pool.worker")
    parser.add_argument("--memory-mb", type=int, default=0)
    args = parser.parse_args(argv)
    if args.memory_mb:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        reply = solve(request["smt2"], request["timeout_s"])
        out.write(json.dumps({"id": request["id"], **reply}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
