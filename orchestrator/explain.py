"""Findings and reasons in a kernel engineer's terms: the human output of `lark verify` (and the report's).

The core names what it found in PTX terms: a flat element index, a PTX line. A person fixes a CUDA or
Triton source with a shaped tensor, so two steps happen here, outside the trusted core:
* `annotate` (at the end of a job, where the task's shapes are known) adds to every witness part that
  names a buffer its shape and the element as a multi-index (`"element": "y[17, 16]"`), and to the
  reason the source line of every PTX line it names (`line 97 [kernel.py:12]`);
* `human` lays a result out as lines: each witness's block and thread (Triton: program id), the element,
  the input values, both values and the source line; a long reason cut to its first parts with a count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from orchestrator.result import Result, shown_state

REASON_PARTS = 4          # parts of a `;`-joined reason shown by the human output (all are in --json)
FLAT_KEY = re.compile(r"^(\w+)\[(\d+)\]$")                 # an input value's key, "x[1234]"
PTX_LINE = re.compile(r"\b(lines? )(\d+)( and )?(\d+)?")   # "line 97", "lines 110 and 117"
MANGLED_LOCAL = re.compile(r"^_ZZ\d+\w*?E(\d+)")                # a function-local static: _ZZ<fn>E<len><name>
Shapes = Mapping[str, tuple[int, ...]]


def readable(buffer: str) -> str:
    """A shared array's C name for its nvcc-mangled one (`_ZZ15transpose_tiledE4tile` -> `tile`)."""
    found = MANGLED_LOCAL.match(buffer)
    return buffer[found.end():found.end() + int(found.group(1))] if found else buffer


def multi_index(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A flat (row-major, contiguous) element index as one index per dimension of `shape`."""
    digits = []
    for size in reversed(shape):
        index, digit = divmod(index, size) if size else (index, 0)
        digits.append(digit)
    return tuple(reversed(digits))


def element(buffer: str, index: int, shapes: Shapes) -> str:
    """`y[17, 16]` for element 1104 of a [64, 64] tensor y; the flat index when the shape is not known or
    the index lies outside it (an out-of-bounds witness)."""
    shape = shapes.get(buffer)
    size = 1
    for d in shape or ():
        size *= d
    if not shape or not 0 <= index < size:
        return f"{buffer}[{index}]"
    return f"{buffer}[{', '.join(map(str, multi_index(index, shape)))}]"


def buffer_shapes(prepared) -> dict[str, tuple[int, ...]]:
    """Each named tensor's shape: the reference's inputs, outputs and parameters, and declared tensors."""
    shapes = {name: tuple(decl.shape) for name, decl in prepared.task.tensors.items()
              if decl.shape is not None and not decl.unbounded}   # a declaration may give only `init`
    ref, graph = prepared.task.reference, prepared.graph
    if ref is None or graph is None:
        return shapes
    for name, spec in zip(ref.inputs, graph.user_inputs, strict=False):
        if hasattr(spec, "shape"):
            shapes[name] = tuple(spec.shape)
    shapes.update({name: tuple(spec.shape) for name, spec in zip(ref.outputs, graph.outputs, strict=False)})
    shapes.update({name: tuple(graph.params[p].shape) for name, p in ref.parameters.items() if p in graph.params})
    return shapes


def _shape_part(part: dict, shapes: Shapes) -> None:
    buffer, index = part.get("buffer"), part.get("element_index")
    if isinstance(buffer, str) and isinstance(index, int) and buffer in shapes:
        part["shape"] = list(shapes[buffer])
        part["element"] = element(buffer, index, shapes)
    if isinstance(part.get("inputs"), dict):      # "x[4368]" -> "x[17, 16]", beside the flat keys
        part["input_elements"] = {_flat_to_shaped(key, shapes): key for key in part["inputs"]}
    for value in part.values():
        if isinstance(value, dict):
            _shape_part(value, shapes)


def with_sources(text: str, lines: Mapping[int, str]) -> str:
    """Each PTX line a reason names followed by its source line, where the PTX's .loc directives know it."""
    def sourced(match: re.Match) -> str:
        shown = [lines.get(int(n)) for n in (match.group(2), match.group(4)) if n]
        where = ", ".join(s for s in shown if s)
        sourced_already = match.string[match.end():match.end() + 3].lstrip(") ").startswith("[")
        return match.group(0) + (f" [{where}]" if where and not sourced_already else "")
    return PTX_LINE.sub(sourced, text)


def annotate(result: Result, prepared) -> None:
    """Add shapes, multi-indices and source lines to a finished job's result (see the module docstring)."""
    # Imported here: the report and `lark batch` use this module without the verdict's ~0.5 s of imports.
    from semantics.sources import source_lines

    shapes = buffer_shapes(prepared)
    for finding in result.findings:
        _shape_part(finding.get("witness") or {}, shapes)
    if result.reason:
        problem = prepared.problem
        result.reason = with_sources(result.reason, source_lines(problem.kernel, problem.source_files))


# ---------------------------------------------------------------------------------------------------------
# The human output
# ---------------------------------------------------------------------------------------------------------


def _flat_to_shaped(key: str, shapes: Shapes) -> str:
    found = FLAT_KEY.match(key)
    return element(found.group(1), int(found.group(2)), shapes) if found else key


def _who(part: dict) -> str:
    """Block (program id for Triton) and thread of a witness part, with its loop iterations."""
    block = part.get("program_id")
    who = f"program_id {block}" if block is not None else f"block {part.get('block')}"
    who += f" thread {part.get('thread')}"
    iterations = [f"{k.removeprefix('iteration@')} iteration {v}" for k, v in part.items()
                  if k.startswith("iteration@")]
    return who + (f" ({', '.join(iterations)})" if iterations else "")


def _where(part: dict) -> str:
    """The source line of a witness part, its PTX line beside it; the PTX line alone only when no source
    line is known (a .ptx kernel)."""
    line, source = part.get("line"), part.get("source")
    if source:
        return f"{source} (PTX line {line})" if line is not None else source
    return f"PTX line {line}" if line is not None else ""


def witness_lines(witness: dict) -> list[str]:
    """The witness of one finding as indented `label  value` lines."""
    rows: list[tuple[str, str]] = []
    if "element" in witness or "element_index" in witness and "buffer" in witness:
        shown = witness.get("element") or f"{witness['buffer']}[{witness['element_index']}]"
        shape = f" of shape {witness['shape']}" if "shape" in witness else ""
        name = readable(witness.get("buffer", ""))
        if name != witness.get("buffer"):
            shown, shape = f"{name}[{witness['element_index']}]", f" of shared array {witness['buffer']}"
        rows.append(("element", f"{shown} (flat index {witness.get('element_index')}{shape})"))
    for key in ("first", "second"):
        if isinstance(witness.get(key), dict):
            part = witness[key]
            rows.append((key, f"{_who(part)} {part.get('access', '')}s it at {_where(part)}".replace("  ", " ")))
    if "thread" in witness:
        rows.append(("by", _who(witness)))
    if "kernel_value" in witness:
        rows.append(("kernel", f"{witness['kernel_value']:.9g}"))
        rows.append(("reference", f"{witness.get('reference_value', float('nan')):.9g}"))
    if witness.get("inputs"):
        inputs, shaped = witness["inputs"], {v: k for k, v in witness.get("input_elements", {}).items()}
        values = [f"{shaped.get(k, k)} = {v}" for k, v in inputs.items()] if isinstance(inputs, dict) \
            else [str(inputs)]
        rows.append(("inputs", ", ".join(values[:8]) + (f", ... ({len(values) - 8} more)" if len(values) > 8 else "")))
    if witness.get("sizes"):
        rows.append(("sizes", ", ".join(f"{k} = {v}" for k, v in witness["sizes"].items())))
    if "thread" in witness and _where(witness):
        rows.append(("source", _where(witness)))
    return [f"      {label:10} {value}" for label, value in rows]


def reason_lines(reason: str, limit: int = REASON_PARTS) -> list[str]:
    """A `;`-joined reason as one line per part, the first `limit` of them and how many more there are."""
    parts = list(dict.fromkeys(p.strip() for p in reason.split("; ") if p.strip()))
    shown = [f"  reason: {parts[0]}"] + [f"          {p}" for p in parts[1:limit]]
    if len(parts) > limit:
        shown.append(f"          ... and {len(parts) - limit} more (all of them in --json)")
    return shown


def human(result: Result) -> str:
    """`lark verify`'s output without --json."""
    lines = [f"{result.name}: {result.verdict}"]
    lines += [f"  {prop:20} {shown_state(prop, state)}" for prop, state in result.properties.items()]
    for finding in result.findings:
        lines.append(f"  finding ({finding['property']}): {finding['message']}")
        lines += witness_lines(finding.get("witness") or {})
    if result.reason:
        lines += reason_lines(result.reason)
    if result.axioms:
        lines.append(f"  axioms used: {', '.join(result.axioms)}")
    if result.certificate:
        lines.append(f"  certificate: {result.certificate}")
    lines.append(f"  {result.stats.get('obligations', 0)} obligations, {result.stats.get('wall_seconds', 0)} s")
    return "\n".join(lines)


# What `--certificate` and `--witness` write, and for which verdict; asked for another, the CLI says so.
DOCUMENTS = {"certificate": ("verified", "a certificate proves a verified task; use --witness for a refuted one"),
             "witness": ("refuted", "a witness file holds the findings of a refuted task")}


def document_notes(result: Result, asked: Mapping[str, Path | None]) -> list[str]:
    """One line per requested document that does not apply to this verdict (so none was written)."""
    notes = []
    for kind, path in asked.items():
        applies, why = DOCUMENTS[kind]
        if path is not None and result.verdict not in (applies, "error"):
            notes.append(f"lark: no {kind} written to {path}: the task is {result.verdict} ({why})")
    return notes
