"""Batch reports: JUnit XML for CI, one self-contained HTML page for people, and the batch exit status.

JUnit mapping (one testcase per task, named by the task, its verdict in a `verdict` property):
* verified -> passed;
* refuted  -> <failure type="refuted"> with the findings;
* error    -> <failure type="error"> with the reason (bad input, or a task the cluster lost);
* unknown  -> <skipped> with the reason: LARK could not decide, which is not a defect found in the kernel,
  but it must stay visible — CI dashboards show skipped tests.
Exit status of `lark batch` (`batch_exit_status`): 3 if any task is `error` (also, from the CLI, when SOURCE
does not exist or holds no task), else 1 if any is `refuted`, else 2 if any is `unknown` and the batch was
run with `--fail-on unknown` (a CI gate that accepts proved kernels only), else 0.
"""

from __future__ import annotations

import html
import json
import os
import tomllib
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from xml.etree import ElementTree as ET

from orchestrator import version as lark_versions
from orchestrator.explain import reason_lines, witness_lines
from orchestrator.result import Result, shown_state

COLOURS = {"verified": "#1a7f37", "refuted": "#cf222e", "unknown": "#9a6700", "error": "#8250df"}


# --fail-on: the verdicts that fail a batch, by the weakest one named. Error and refuted always fail it.
FAIL_ON = {"refuted": ("error", "refuted"), "unknown": ("error", "refuted", "unknown")}
BATCH_EXIT = {"error": 3, "refuted": 1, "unknown": 2}     # the first verdict present, in this order, decides


def batch_exit_status(results: list[Result], fail_on: str = "refuted") -> int:
    verdicts = {r.verdict for r in results} & set(FAIL_ON[fail_on])
    return next((code for verdict, code in BATCH_EXIT.items() if verdict in verdicts), 0)


def _details(result: Result) -> str:
    lines = [f"{f['property']}: {f['message']}" for f in result.findings]
    if result.reason:
        lines.append(f"reason: {result.reason}")
    return "\n".join(lines)


def write_junit(path: Path, rows: list[tuple[Path, Result]]) -> None:
    counts = Counter(r.verdict for _, r in rows)
    suite = ET.Element("testsuite", name="lark", tests=str(len(rows)),
                       failures=str(counts["refuted"] + counts["error"]), errors="0",
                       skipped=str(counts["unknown"]),
                       time=f"{sum(r.stats.get('wall_seconds', 0) for _, r in rows):.3f}")
    for manifest, result in rows:
        case = ET.SubElement(suite, "testcase", name=result.name, classname=f"lark.{manifest.parent.name}",
                             file=str(manifest), time=f"{result.stats.get('wall_seconds', 0):.3f}")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="verdict", value=result.verdict)
        for prop, state in result.properties.items():
            ET.SubElement(props, "property", name=prop, value=state)
        message = f"{result.verdict}: {result.reason or (result.findings[0]['message'] if result.findings else '')}"
        if result.verdict in ("refuted", "error"):
            ET.SubElement(case, "failure", type=result.verdict, message=message).text = _details(result)
        elif result.verdict == "unknown":
            ET.SubElement(case, "skipped", message=message)
        ET.SubElement(case, "system-out").text = json.dumps(result.to_json(), indent=2)
    ET.indent(suite)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


SEVERITY = ("refuted", "error", "unknown", "verified")      # the report lists the worst first
STYLE = """body{font-family:system-ui,sans-serif;margin:24px;color:#1f2328}
h1{margin:0 0 4px} .meta{color:#57606a;margin:0 0 16px} .meta b{color:#1f2328}
table{border-collapse:collapse;width:100%} th{background:#f6f8fa;position:sticky;top:0}
td,th{border:1px solid #d0d7de;padding:6px 8px;vertical-align:top;text-align:left} th{white-space:nowrap}
td.num{text-align:right;white-space:nowrap} .path{color:#57606a;font-size:85%;word-break:break-all}
.verdict{font-weight:bold;white-space:nowrap} .links a{margin-right:8px;white-space:nowrap}
pre{margin:0;white-space:pre-wrap;font-size:85%} details summary{cursor:pointer;color:#57606a}
.props{font-size:85%;white-space:nowrap} .count{display:inline-block;padding:2px 8px;border-radius:10px;
color:#fff;margin-right:6px}"""


def _link(target: Path | None, text: str, page: Path) -> str:
    """A link relative to the report's folder (the report moves with the tasks), or nothing."""
    if target is None or not target.exists():
        return ""
    href = os.path.relpath(target.absolute(), page.absolute().parent)
    return f"<a href='{html.escape(href)}'>{html.escape(text)}</a>"


def _kernel_source(manifest: Path) -> Path | None:
    """The kernel source a manifest names, read without validating the rest of it (the report shows broken
    tasks too)."""
    try:
        source = tomllib.loads(manifest.read_text(encoding="utf-8")).get("kernel", {}).get("source")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        return None
    return manifest.parent / source if isinstance(source, str) else None


def _findings_html(result: Result) -> str:
    """Each finding with its witness laid out (`explain.witness_lines`), and the reason cut to its first
    parts with the rest folded away."""
    blocks = []
    for f in result.findings:
        lines = [f"{f['property']}: {f['message']}", *(line.strip() for line in witness_lines(f.get("witness") or {}))]
        blocks.append(f"<pre>{html.escape(chr(10).join(lines))}</pre>")
    if result.reason:
        shown = [line.strip() for line in reason_lines(result.reason)]
        blocks.append(f"<pre>{html.escape(chr(10).join(shown))}</pre>")
        if len(shown) > 1 and shown[-1].startswith("..."):
            blocks.append(f"<details><summary>the whole reason</summary><pre>{html.escape(result.reason)}</pre>"
                          f"</details>")
    return "".join(blocks)


def _properties_html(result: Result) -> str:
    """`all 5 proved` when every property shares a state, else one line per property."""
    states = set(result.properties.values())
    if len(states) == 1:
        return f"all {len(result.properties)} {html.escape(states.pop())}"
    return "<br>".join(f"{html.escape(p)}: {html.escape(shown_state(p, s))}" for p, s in result.properties.items())


def _document(result: Result, documents: tuple[Path, Path] | None) -> tuple[Path | None, str]:
    """The file that goes with the verdict: a verified task's certificate, a refuted task's witness."""
    if result.certificate:
        return Path(result.certificate), "certificate"
    if documents is None or result.verdict not in ("verified", "refuted"):
        return None, ""
    return (documents[0], "certificate") if result.verdict == "verified" else (documents[1], "witness")


def _row(manifest: Path, result: Result, page: Path, twins: set[str], documents: tuple[Path, Path] | None) -> str:
    props = _properties_html(result)
    kind = " <small>(safety-only)</small>" if result.safety_only else ""
    twin = " <small title='another task has this name'>(same name)</small>" if result.name in twins else ""
    links = [_link(_kernel_source(manifest), "source", page), _link(manifest, "lark.toml", page),
             _link(*_document(result, documents), page)]
    stats = result.stats
    folder = html.escape(str(manifest.parent))
    return (f"<tr><td><b>{html.escape(result.name)}</b>{kind}{twin}<div class='path'>{folder}</div>"
            f"<div class='links'>{''.join(links)}</div></td>"
            f"<td class='verdict' style='color:{COLOURS[result.verdict]}'>{result.verdict}</td>"
            f"<td>{_findings_html(result)}</td><td class='props'>{props}</td>"
            f"<td class='num'>{stats.get('wall_seconds', 0):.2f}</td><td class='num'>{stats.get('obligations', 0)}</td>"
            f"<td class='num'>{stats.get('cache_hits', 0)}</td></tr>")


def write_html(path: Path, rows: list[tuple[Path, Result]], wall_s: float | None = None,
               started: datetime | None = None, documents: Mapping[Path, tuple[Path, Path]] | None = None) -> None:
    """One self-contained page: the batch's date, LARK version and times, then every task, the worst verdicts
    first, each with its witnesses or reason and links to its source, manifest and certificate or witness
    file (`documents`: each manifest's (certificate, witness) paths, from `lark batch --certificates`)."""
    counts = Counter(r.verdict for _, r in rows)
    badges = "".join(f"<span class='count' style='background:{COLOURS[v]}'>{counts[v]} {v}</span>"
                     for v in SEVERITY if counts[v])
    safety_only = sum(r.safety_only for _, r in rows)
    safety = f" ({safety_only} safety-only: equivalence not asked for)" if safety_only else ""
    names = Counter(r.name for _, r in rows)
    twins = {name for name, n in names.items() if n > 1}
    ordered = sorted(rows, key=lambda row: (SEVERITY.index(row[1].verdict), row[1].name, str(row[0])))
    task_s = sum(r.stats.get("wall_seconds", 0) for _, r in rows)
    when = (started or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S %Z")
    total = f"<b>{wall_s:.1f} s</b> in all, " if wall_s is not None else ""
    documents = documents or {}
    body = "\n".join(_row(manifest, result, path, twins, documents.get(manifest)) for manifest, result in ordered)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>LARK batch report</title><style>{STYLE}</style></head><body>
<h1>LARK batch report</h1>
<p class="meta">{html.escape(when)} &middot; LARK {html.escape(lark_versions.lark_version())} &middot;
{total}<b>{task_s:.1f} s</b> of task time</p>
<p>{len(rows)} tasks: {badges}{safety}</p>
<table><thead><tr><th>task</th><th>verdict</th><th>findings, witnesses and reason</th><th>properties</th>
<th>wall s</th><th>obligations</th><th>cache hits</th></tr></thead><tbody>
{body}
</tbody></table></body></html>
"""
    path.write_text(page, encoding="utf-8")
