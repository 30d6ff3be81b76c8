"""Differential testing of the semantics: random single-thread PTX programs (integer and float rows, predicated
instructions, forward branches) give the same stored values under the symbolic executor, evaluated at the
inputs, as under the concrete interpreter (tests/ptx_fuzz.py; bench/semantics_fuzz.py runs more)."""

from __future__ import annotations

import random

from tests.ptx_fuzz import compare, generate

PROGRAMS = 150
SEED = 20261201


def test_random_programs_agree():
    rng = random.Random(SEED)
    mismatches = []
    for _ in range(PROGRAMS):
        program = generate(rng)
        found = compare(program)
        if found:
            mismatches.append(f"{found}\n{program.text}\ninputs {program.ints} {program.floats}")
    assert not mismatches, f"{len(mismatches)} of {PROGRAMS} programs disagree; the first:\n{mismatches[0]}"


def test_a_predicated_first_definition_is_seen_by_the_interpreter():
    """The interpreter must notice a stored register some path leaves undefined (issue 13, item 2)."""
    rng = random.Random(SEED)
    seen = 0
    for _ in range(200):
        program = generate(rng, undefined=True)
        found = compare(program)
        seen += bool(found and "halted (undefined_register)" in found)
    assert seen > 0
