"""Barriers inside a loop: the phase of an access as a term in the loop's iteration.

A phase is the stretch of a thread's execution between two consecutive barriers; two accesses by threads
of one block can be concurrent only when both threads have passed the same number of barriers. Loops are
summarised for a symbolic iteration k (semantics/ptx/symexec.py), so when a loop body contains barriers
the number of barriers passed before an access becomes a term:

    phase = P₀ + k·b + p

where P₀ is the number passed before the loop (itself such a term after an earlier loop with barriers),
b the number one whole iteration passes, and p the number passed so far in iteration k. On the states
that leave the loop (at its exit iteration, k then the proved exit bound or a symbolic exit iteration on
the leaving path), the same formula counts the completed iterations and the barriers of the last, partial
one, so accesses after the loop get exact phases too.

Why this is exact, and what it relies on:

* b is well defined: every path from the loop header back to it passes the same barrier instructions in
  the same order (`per_iteration`); otherwise the loop is Unsupported. So after k whole iterations a
  thread has passed exactly k·b barriers in the loop, whichever paths it took.
* The n-th barrier one thread passes is the n-th barrier every other thread of its block passes only if
  they all pass the same sequence of barriers: barrier uniformity. For loops with barriers it is checked
  by `semantics.properties.loop_barriers` (every thread of the block enters the loop or none does, and at
  every iteration all or none take the back edge), together with the usual comparison of the barrier
  sequences of the remaining paths (`semantics.properties.barriers`). Under uniformity the phase numbers
  of two accesses are equal exactly when no barrier separates them, so the race check asks for equal phase
  terms (the second thread's iteration variable renamed apart): the same iteration and segment, and also
  the last segment of iteration k against the first segment of iteration k+1 (P₀ + k·b + b = P₀ + (k+1)·b
  + 0), and the first segment of iteration 0 against the accesses just before the loop.
* The count is a 64-bit term. k is bounded by the loop's proved iteration bound in every access guard,
  so k·b does not wrap for any loop that can run; a wrap could only make two different counts equal,
  which would be a spurious race candidate (still subject to the witness reachability check), never a
  missed one.

What is not modelled yet, and so is kept out (the properties that would need it stay unknown): values
read from shared memory in or after such a loop are opaque (their last writer in an earlier phase of the
same iteration is not resolved), shared-read initialisation is not checked for such kernels, and a thread's
own earlier stores are not forwarded past such a loop.
"""

from __future__ import annotations

import z3

from semantics.errors import Unsupported


def per_iteration(passed: list[tuple[int, ...]], where: str) -> tuple[int, ...]:
    """The barrier lines one iteration passes, given those passed on each path back to the header."""
    if not passed:
        return ()
    first = passed[0]
    if any(p != first for p in passed[1:]):
        raise Unsupported("a loop whose iterations pass different barriers on different paths", where)
    return first


def completed(before: z3.BitVecRef | None, k: z3.BitVecRef, per: int) -> z3.BitVecRef:
    """Barriers passed in loops before the current iteration k of a loop that passes `per` per iteration."""
    base = before if before is not None else z3.BitVecVal(0, 64)
    return z3.simplify(base + k * per)
