"""Differential testing of the semantics at scale: random single-thread PTX programs run by the symbolic
executor (values evaluated at the inputs) and by the concrete interpreter (tests/ptx_fuzz.py).

Prints programs tried, compared (neither side unsupported), and mismatches, the first few in full. With
`--undefined`, first definitions may be predicated (a register defined on one path only, then stored): the
interpreter then halts on the undefined read, so every such program the symbolic side accepts is a mismatch
until the symbolic side reports the read (issue 13, item 2). A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import time

from tests.ptx_fuzz import compare, concrete, generate, symbolic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", type=int, default=12, help="instructions per program")
    parser.add_argument("--undefined", action="store_true", help="allow predicated first definitions")
    parser.add_argument("--show", type=int, default=3, help="mismatching programs printed in full")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    start, mismatches, compared = time.perf_counter(), [], 0
    for _ in range(args.programs):
        program = generate(rng, args.size, args.undefined)
        if concrete(program) is not None and symbolic(program) is not None:
            compared += 1
        found = compare(program)
        if found:
            mismatches.append((found, program))
    for found, program in mismatches[:args.show]:
        print(f"--- mismatch: {found}\n{program.text}inputs a={program.ints} x={program.floats}\n")
    seconds = time.perf_counter() - start
    print(f"programs tried: {args.programs}  compared: {compared}  mismatches: {len(mismatches)}  "
          f"({seconds:.1f} s, {args.programs / seconds:.1f} programs/s)")


if __name__ == "__main__":
    main()
