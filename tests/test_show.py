"""`lark verify --show STAGE` (issue 14, item 5): each pass's product, printed so a person sees where a proof
stops. The tasks are tests/tiny_tasks.py's hand-written PTX (no nvcc); each run costs one capture."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from orchestrator.cli import main
from orchestrator.show import MAX_ROWS, STAGES, _rows
from tests.tiny_tasks import write_task


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory):
    saved = os.environ.get("LARK_CACHE_DIR")
    root = tmp_path_factory.mktemp("show")
    os.environ["LARK_CACHE_DIR"] = str(root / "cache")
    yield {kind: write_task(root, kind, kind) for kind in ("copy", "doubled")}
    if saved is None:
        del os.environ["LARK_CACHE_DIR"]
    else:
        os.environ["LARK_CACHE_DIR"] = saved


def lark(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def sections(text: str) -> dict[str, str]:
    """Stage name -> its printed body."""
    found, name = {}, None
    for line in text.splitlines():
        if line.startswith("== ") and line.endswith(" =="):
            name = line[3:-3]
            found[name] = ""
        elif name is not None:
            found[name] += line + "\n"
    return found


def test_every_stage_of_a_verified_task(tasks) -> None:
    ran = lark("verify", tasks["copy"], *[a for s in STAGES for a in ("--show", s)])
    assert ran.exit_code == 0, ran.output
    shown = sections(ran.stdout)
    assert list(shown) == list(STAGES)        # every stage, in the core's order, before the verdict
    assert ".entry" in shown["ptx"]
    assert "y[e]" in shown["reference"] and "x(e)" in shown["reference"]
    assert "store global y" in shown["effects"] and "load global x" in shown["effects"]
    # every top goal of every property is stated by a theorem: no goal is listed as open
    assert "memory_safety (proved)" in shown["goals"] and "stated" in shown["goals"]
    assert "[open]" not in shown["goals"] and "[no form]" not in shown["goals"]
    assert "by_smt" in shown["proof"] and "top goals" in shown["proof"]
    assert "proved" in shown["obligations"] and "equivalence:" in shown["obligations"]
    assert "copy: verified" in shown["obligations"]     # the verdict follows the last stage


def test_a_refuted_task_shows_the_open_goal_and_its_outcome(tasks) -> None:
    ran = lark("verify", tasks["doubled"], "--show", "goals")
    assert ran.exit_code == 1, ran.output
    goals = sections(ran.stdout)["goals"]
    open_rows = [line for line in goals.splitlines() if "[open]" in line]
    assert open_rows and any(line.rstrip().endswith(": refuted") for line in open_rows), goals


def test_with_json_the_stages_go_to_stderr_and_stdout_stays_one_object(tasks) -> None:
    ran = lark("verify", tasks["copy"], "--json", "--show", "obligations")
    assert ran.exit_code == 0
    assert json.loads(ran.stdout)["verdict"] == "verified"
    assert "== obligations ==" in ran.stderr and "== obligations ==" not in ran.stdout


def test_an_unknown_stage_is_a_usage_error(tasks) -> None:
    ran = lark("verify", tasks["copy"], "--show", "tactics")
    assert ran.exit_code == 3
    assert "tactics" in ran.output


class _StopsAfter:
    """A checker whose wall-time budget runs out after `n` obligations (the way `within` interrupts a job)."""

    def __init__(self, n: int):
        from lean_pool.checker import Z3Checker
        self.inner, self.n, self.name = Z3Checker(), n, "z3"

    def check(self, obligation, timeout_s):
        from orchestrator.deadline import DeadlinePassed
        if self.n == 0:
            raise DeadlinePassed()
        self.n -= 1
        return self.inner.check(obligation, timeout_s)


def test_a_run_the_budget_stops_still_shows_what_finished(tasks) -> None:
    from orchestrator.job import run_verify
    from orchestrator.show import render
    from semantics.verdict import Report

    seen: list[tuple[object, Report]] = []
    result = run_verify(tasks["copy"], 60.0, checker=_StopsAfter(2),
                        inspect=lambda prepared, report: seen.append((prepared, report)))
    assert result.verdict == "unknown" and "exhausted" in result.reason
    (prepared, report), = seen
    assert len(report.obligations) == 2 and report.reason == result.reason
    shown = sections(render(("ptx", "goals", "obligations"), prepared, report))
    assert ".entry" in shown["ptx"] and "did not run" in shown["goals"]
    assert len([row for row in shown["obligations"].splitlines() if row.startswith("  proved")]) == 2


def test_a_long_stage_keeps_its_first_and_its_last_rows() -> None:
    # a proof stops at its last obligations: a cut in the middle keeps them, and says how many it left out
    rows = [f"  row {k}" for k in range(MAX_ROWS + 37)]
    shown = _rows(rows, "obligations")
    assert shown[0] == "  row 0" and shown[-1] == rows[-1]
    assert "  ... 37 more obligations" in shown and len(shown) == MAX_ROWS + 1
    assert _rows(rows[:MAX_ROWS], "obligations") == rows[:MAX_ROWS]
