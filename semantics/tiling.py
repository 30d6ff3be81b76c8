"""Tiling coverage: whether affine progressions of indices cover a range (each index once, or at least once).

A definition on concrete numbers, trusted (docs/trusted_base.md): the kernel's `tiled_union`
(semantics/proof/unions.py) decides with it that a reduction's tiled parts reach every element of the
reference's range, and for a Sum each element exactly once. Kept outside the kernel because it is arithmetic
about integers, not a rule: it makes no theorem and asks no solver.
"""

from __future__ import annotations

import math

MAX_PERIOD = 1 << 16     # the strides' common multiple the check accepts (larger: not covered, so refused)


def common_period(progressions: list[tuple[int, int, int]]) -> int | None:
    """The strides' least common multiple over the progressions of more than one index; None when a stride
    is not positive or the multiple exceeds MAX_PERIOD (the residue classes would be too many to walk)."""
    period = 1
    for _, stride, count in progressions:
        if count > 1:
            if stride <= 0:
                return None
            period = period * stride // math.gcd(period, stride)
            if period > MAX_PERIOD:
                return None
    return period


def covers(progressions: list[tuple[int, int, int]], lo: int, hi: int, exact: bool) -> bool:
    """Whether the progressions (start, stride, count) cover [lo, hi), each index once if `exact`, and lie in it."""
    if any(n > 0 and not (lo <= a and a + (s * (n - 1) if n > 1 else 0) < hi) for a, s, n in progressions):
        return False
    period = common_period(progressions)
    return period is not None and reaches(progressions, lo, hi, exact, period)


def reaches(progressions: list[tuple[int, int, int]], lo: int, hi: int, exact: bool, period: int) -> bool:
    """Whether every index of [lo, hi) is in some progression (in exactly one, if `exact`, counting only the
    indices from lo on), by residue classes modulo `period` (a common multiple of the strides): each
    progression is a few runs per class, and a class is reached when its runs leave no gap."""
    runs: dict[int, list[tuple[int, int]]] = {}
    for start, stride, count in progressions:
        step = stride if count > 1 else period
        for k in range(period // step if count > 1 else 1):
            first = start + k * step
            n = (count - k + (period // step) - 1) // (period // step) if count > 1 else 1
            if count > 0 and n > 0:
                runs.setdefault(first % period, []).append(((first - first % period) // period, n))
    for residue in range(period):
        first_m = lo + ((residue - lo) % period)
        if first_m >= hi:
            continue
        reach, end = (first_m - residue) // period, (hi - 1 - residue) // period + 1
        for begin, n in sorted(runs.get(residue, [])):
            if begin > reach or (exact and begin < reach):
                return False
            reach = max(reach, begin + n)
        if reach < end:
            return False
    return True
