"""Whether arithmetic progressions of integers tile a range: the counting step of the reduction matcher.

Once every kernel term's image is proved to be a progression {start + stride·k : k < count} of the
reference's index range, covering the range (for max/min) or covering it exactly once (for sums) is plain
arithmetic on a few numbers per progression, done here by residue classes modulo the strides' lcm.
"""

from __future__ import annotations

import math

MAX_PERIOD = 1 << 16


def tiles(progressions: list[tuple[int, int, int]], bounds: tuple[int, int], exact: bool) -> bool | None:
    """Do the progressions (start, stride, count) cover [lo, hi) (exactly once each, if `exact`)?"""
    lo, hi = bounds
    period = 1
    for _, stride, count in progressions:
        if count > 1:
            if stride <= 0:
                return None
            period = period * stride // math.gcd(period, stride)
            if period > MAX_PERIOD:
                return None
    runs: dict[int, list[tuple[int, int]]] = {}
    for start, stride, count in progressions:
        if count <= 0:
            continue
        step = stride if count > 1 else period
        for k in range(period // step if count > 1 else 1):
            first = start + k * step
            n = (count - k + (period // step) - 1) // (period // step) if count > 1 else 1
            if n > 0:
                runs.setdefault(first % period, []).append(((first - first % period) // period, n))
    for residue in range(period):
        first_m = lo + ((residue - lo) % period)
        if first_m >= hi:
            continue
        want = ((first_m - residue) // period, (hi - 1 - residue) // period + 1)
        spans = sorted(runs.get(residue, []))
        reach = want[0]
        for begin, n in spans:
            if begin > reach:
                return False
            if exact and begin < reach:
                return False
            reach = max(reach, begin + n)
        if reach < want[1]:
            return False
    return True
