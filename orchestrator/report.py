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
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree as ET

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


def write_html(path: Path, rows: list[tuple[Path, Result]]) -> None:
    counts = Counter(r.verdict for _, r in rows)
    summary = ", ".join(f"{counts[v]} {v}" for v in COLOURS if counts[v])
    safety_only = sum(r.safety_only for _, r in rows)
    safety = f" ({safety_only} safety-only: equivalence not asked for)" if safety_only else ""
    body = []
    for manifest, r in sorted(rows, key=lambda row: (list(COLOURS).index(row[1].verdict), row[1].name)):
        props = "<br>".join(f"{html.escape(p)}: {html.escape(shown_state(p, s))}" for p, s in r.properties.items())
        kind = "<br><small>safety-only</small>" if r.safety_only else ""
        stats = r.stats
        body.append(
            f"<tr><td title='{html.escape(str(manifest))}'>{html.escape(r.name)}{kind}</td>"
            f"<td style='color:{COLOURS[r.verdict]};font-weight:bold'>{r.verdict}</td>"
            f"<td>{props}</td><td><pre>{html.escape(_details(r))}</pre></td>"
            f"<td>{stats.get('wall_seconds', 0)}</td><td>{stats.get('obligations', 0)}</td>"
            f"<td>{stats.get('cache_hits', 0)}</td></tr>")
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>LARK batch report</title>
<style>body{{font-family:sans-serif}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}} pre{{margin:0;white-space:pre-wrap}}
</style></head><body>
<h1>LARK batch report</h1><p>{len(rows)} tasks: {summary}{safety}</p>
<table><tr><th>task</th><th>verdict</th><th>properties</th><th>findings and reason</th><th>wall s</th>
<th>obligations</th><th>cache hits</th></tr>
{chr(10).join(body)}
</table></body></html>
"""
    path.write_text(page, encoding="utf-8")
