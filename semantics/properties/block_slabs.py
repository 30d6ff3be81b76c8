"""Races across blocks ruled out by slabs: each block's accesses lie in its own stretch of the buffer.

A row-per-block kernel writes `out[S·b + u]` with u < S (u the thread's column, a loop's iterate): two
different blocks b ≠ b' can never meet, but the two-thread obligation asks the solver to see that through
both threads' loop iterations and 64-bit wrap-around at once, which it does not in minutes. Here it is
proved once per access site, then joined by arithmetic over atoms, every step a kernel rule:

1. slab (per site x, one thread): ⊢ in_launch ∧ guard_x → S·c ≤ off_x ∧ off_x + w_x ≤ S·c + S, with c the
   block coordinate of one grid axis (its low bits) and the arithmetic wide enough not to wrap; `by_smt`.
2. the second thread's copy: `instantiate` of every thread-local symbol by its primed twin.
3. across (c ≠ c'): ⊢ slab_a ∧ slab_b' ∧ order → ¬(F ∧ c ≠ c'), F the race formula, order the kernel's
   `ordered_multiples` both ways (c < c' → S·c + S ≤ S·c': the multiplier comparison the solver cannot do),
   proved by `by_smt` with the offsets, guards and products S·c read as atoms (so only additions and
   comparisons are left), the atoms then instantiated back; `conj` and `mp` discharge the premises.
4. along (c = c'): ⊢ ¬(F ∧ ¬(c ≠ c')) by `by_smt`: the threads share the axis coordinate (one block on a
   1-D grid), the case the solver decides quickly.
5. ⊢ ¬F from 3 and 4 by a propositional step (`by_smt` over atoms, instantiated back, `mp`).

The stride S is a guess (the offset's change when c moves by one, the thread's other symbols at 0); a wrong
guess only makes a step refuse, and the caller then asks the plain obligation. Untrusted: a tactic.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Checker
from semantics.proof import Refused, Theorem
from semantics.proof.indices import multiple, ordered_multiples
from semantics.proof.rules import by_smt, conj, instantiate, mp
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access
from semantics.terms import constants

WIDE = 65   # bits of the slab comparisons: a 64-bit offset plus a width never wraps there
PROP = "race_freedom"


def stride(access: Access, coordinate: z3.BitVecRef) -> int | None:
    """The offset's change per step of the block coordinate, every other thread symbol at 0 (a guess, the
    same at 0 → 1 and 1 → 2), or None when there is none to guess."""
    others = [(c, z3.BitVecVal(0, c.size())) for c in constants(access.offset)
              if z3.is_bv(c) and not c.eq(coordinate)]

    def at(v: int) -> z3.ExprRef:
        return z3.simplify(z3.substitute(access.offset, *others, (coordinate, z3.BitVecVal(v, coordinate.size()))))
    steps = [z3.simplify(at(v + 1) - at(v)) for v in (0, 1)]
    if not all(z3.is_bv_value(s) for s in steps) or steps[0].as_long() != steps[1].as_long():
        return None
    return steps[0].as_long() or None


def _wide(x: z3.BitVecRef, width: int = WIDE) -> z3.BitVecRef:
    return z3.ZeroExt(width - x.size(), x)


def low_bits(coordinate: z3.BitVecRef, blocks: int) -> z3.BitVecRef:
    """c's low bits, as many as the grid's blocks need: the factor of a narrow product."""
    return z3.Extract(max(blocks - 1, 1).bit_length() - 1, 0, coordinate)


def start(coordinate: z3.BitVecRef, blocks: int, size: int) -> z3.BitVecRef | None:
    """S·c at WIDE bits, from c's low bits (`indices.multiple`); None when it may not fit 64 bits."""
    low = low_bits(coordinate, blocks)
    return multiple(low, size, WIDE) if (size << low.size()) < (1 << 64) else None


def slab(access: Access, offset: z3.BitVecRef, begin: z3.BitVecRef, size: int) -> z3.BoolRef:
    """S·c ≤ offset and offset + width ≤ S·c + S (S·c = begin), without wrap."""
    return z3.And(z3.ULE(begin, _wide(offset)), z3.ULE(_wide(offset) + access.width, begin + size))


class Slabs:
    """The slab theorems of one launch's access sites, each proved once and copied to the second thread."""

    def __init__(self, thread: Thread, other: Thread, launch: Launch, checker: Checker, timeout_s: float, record):
        self.thread, self.other, self.launch = thread, other, launch
        self.checker, self.timeout_s, self.record = checker, timeout_s, record
        self._proved: dict[tuple[int, int, int], Theorem | None] = {}

    def axis(self, a: Access, b: Access) -> tuple[int, int] | None:
        """A grid axis with more than one block along which both sites move by the same stride, and it."""
        for axis, blocks in enumerate(self.launch.grid):
            coordinate = self.thread.ctaid[axis]
            if blocks > 1 and (size := stride(a, coordinate)) and stride(b, coordinate) == size:
                return axis, size
        return None

    def first(self, access: Access, axis: int, size: int) -> Theorem | None:
        """⊢ in_launch ∧ guard → slab, for the first thread; None when not proved."""
        key = (id(access), axis, size)
        if key not in self._proved:
            begin = start(self.thread.ctaid[axis], self.launch.grid[axis], size)
            claim = None if begin is None else z3.Implies(z3.And(self.thread.in_launch(self.launch), access.guard),
                                                          slab(access, access.offset, begin, size))
            self._proved[key] = claim if claim is None else \
                self._smt(claim, f"race_freedom: slab of line {access.line} along axis {axis}")
        return self._proved[key]

    def second(self, access: Access, axis: int, size: int, pairs: list) -> Theorem | None:
        """The slab theorem of the second thread: the first thread's, every thread symbol instantiated."""
        theorem = self.first(access, axis, size)
        if theorem is None:
            return None
        for symbol, twin in pairs:
            theorem = instantiate(theorem, symbol, twin)
        return theorem

    def ordered(self, axis: int, size: int) -> list[Theorem]:
        """c < c' → S·c + S ≤ S·c' and the same with the threads swapped (the kernel's `ordered_multiples`)."""
        blocks = self.launch.grid[axis]
        low = low_bits(self.thread.ctaid[axis], blocks), low_bits(self.other.ctaid[axis], blocks)
        return [ordered_multiples(u, v, size, WIDE) for u, v in (low, low[::-1])]

    def _smt(self, claim: z3.BoolRef, name: str) -> Theorem | None:
        try:
            theorem = by_smt(claim, self.checker, self.timeout_s, name, PROP)
        except Refused as refused:
            self.record(refused.obligation, refused.outcome)
            return None
        self.record(*theorem.evidence[0])
        return theorem


def _by_atoms(claim: z3.BoolRef, atoms: list[tuple[z3.ExprRef, z3.ExprRef]], slabs: Slabs,
              name: str) -> Theorem | None:
    """⊢ claim by `by_smt` of the claim with each term read as its atom (substituted in order, instantiated
    back last first); None when not proved or the atoms do not give the claim back."""
    abstract = claim
    for term, atom in atoms:
        abstract = z3.substitute(abstract, (term, atom))
    theorem = slabs._smt(abstract, name)
    if theorem is None:
        return None
    for term, atom in reversed(atoms):
        theorem = instantiate(theorem, atom, term)
    return theorem if theorem.conclusion.eq(claim) else None


def prove_race_free(a: Access, b: Access, formula: z3.BoolRef, guard_b: z3.BoolRef, offset_b: z3.BoolRef,
                    pairs: list, slabs: Slabs, name: str) -> Theorem | None:
    """⊢ ¬formula (the race obligation of the sites a, b, b as the second thread performs it) by the slab
    lemma; None when a step is not proved (the caller then asks the plain obligation)."""
    found = slabs.axis(a, b)
    if found is None:
        return None
    axis, size = found
    mine, theirs = slabs.first(a, axis, size), slabs.second(b, axis, size, pairs)
    if mine is None or theirs is None:
        return None
    facts = [mine, theirs, *slabs.ordered(axis, size)]
    apart = slabs.thread.ctaid[axis] != slabs.other.ctaid[axis]
    across = z3.Implies(z3.And(*(t.conclusion for t in facts)), z3.Not(z3.And(formula, apart)))
    begins = [start(t.ctaid[axis], slabs.launch.grid[axis], size) for t in (slabs.thread, slabs.other)]
    atoms = [(a.guard, z3.Bool("slab!guard")), (guard_b, z3.Bool("slab!guard'")),
             (a.offset, z3.BitVec("slab!offset", 64)), (offset_b, z3.BitVec("slab!offset'", 64)),
             (begins[0], z3.BitVec("slab!start", WIDE)), (begins[1], z3.BitVec("slab!start'", WIDE))]
    across_t = _by_atoms(across, atoms, slabs, f"{name}: across blocks along axis {axis}")
    along_t = slabs._smt(z3.Not(z3.And(formula, z3.Not(apart))), f"{name}: within blocks along axis {axis}")
    if across_t is None or along_t is None:
        return None
    p, d = z3.Bool("slab!race"), z3.Bool("slab!apart")
    cases = z3.Implies(z3.And(z3.Not(z3.And(p, z3.Not(d))), z3.Not(z3.And(p, d))), z3.Not(p))
    joined = _by_atoms(z3.substitute(cases, (p, formula), (d, apart)), [(formula, p), (apart, d)], slabs,
                       f"{name}: the two cases")
    if joined is None:
        return None
    return mp(joined, conj(along_t, mp(across_t, conj(*facts))))
