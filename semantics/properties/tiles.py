"""Whether arithmetic progressions of integers tile a range: the counting step of the reduction matcher.

Once every kernel term's image is proved to be a progression {start + stride·k : k < count} of the
reference's index range, covering the range (for max/min) or covering it exactly once (for sums) is plain
arithmetic on a few numbers per progression, done here by residue classes modulo the strides' lcm.
"""

from __future__ import annotations

from semantics.tiling import common_period, reaches


def tiles(progressions: list[tuple[int, int, int]], bounds: tuple[int, int], exact: bool) -> bool | None:
    """Do the progressions (start, stride, count) cover [lo, hi) (exactly once each, if `exact`)? Unlike the
    kernel's `covers`, a progression may run past the range: the matcher's terms there are padding, and the
    kernel's rule that uses the answer checks the bounds itself. None where the walk cannot decide (a stride
    not positive, too many residue classes), so the matcher tries another route instead of refuting."""
    period = common_period(progressions)
    return None if period is None else reaches(progressions, bounds[0], bounds[1], exact, period)
