"""Source lines of PTX instructions (the PTX's .loc directives), to name where a finding or a construct is."""

from __future__ import annotations

from pathlib import Path

from semantics.ptx.ast import Kernel


def source_lines(kernel: Kernel, files: dict[int, str]) -> dict[int, str]:
    """PTX line -> `file:line` of the source it came from (the PTX's .loc directives)."""
    return {ins.line: f"{Path(files[ins.loc[0]]).name}:{ins.loc[1]}" for ins in kernel.body
            if getattr(ins, "loc", None) and ins.loc[0] in files}
