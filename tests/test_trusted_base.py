"""The trusted base is listed and walled: the import contracts of pyproject.toml hold (and the tool does
catch a broken one), and docs/trusted_base.md lists every trusted file with a true line count."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import trusted_base  # noqa: E402  (bench/trusted_base.py: the table's generator)

ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<lines>\d+) \| (?P<role>\w+) \| .+ \|$")
TOTAL = re.compile(r"^\| \*\*total (?P<role>\w+)\*\* \| (?P<lines>\d+) \|")
# The tolerance docs/trusted_base.md states: a file's count may drift by 10 lines or 10 % (the larger), a
# total by 2 %, before the table must be regenerated.
FILE_SLACK, FILE_RATIO, TOTAL_RATIO = 10, 0.10, 0.02


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _documented() -> tuple[dict[str, tuple[int, str]], dict[str, int]]:
    listed, totals = {}, {}
    for line in trusted_base.DOC.read_text().splitlines():
        if m := ROW.match(line):
            assert m["file"] not in listed, f"{m['file']} listed twice"
            listed[m["file"]] = (int(m["lines"]), m["role"])
        elif m := TOTAL.match(line):
            totals[m["role"]] = int(m["lines"])
    return listed, totals


def test_the_import_contracts_hold(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    config = str(ROOT / "pyproject.toml")
    assert lint_imports(config_filename=config, no_cache=True, no_logo=True) == EXIT_STATUS_SUCCESS


def test_a_broken_contract_fails_the_lint(tmp_path, monkeypatch):
    """The same kind of contract on a two-module package whose inner module imports the outer one."""
    package = tmp_path / "walled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "outer.py").write_text("X = 1\n")
    (package / "inner.py").write_text("Y = 2\n")
    config = tmp_path / "contracts.toml"
    config.write_text('[tool.importlinter]\nroot_packages = ["walled"]\n\n[[tool.importlinter.contracts]]\n'
                      'name = "inner imports no outer"\ntype = "forbidden"\nsource_modules = ["walled.inner"]\n'
                      'forbidden_modules = ["walled.outer"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == EXIT_STATUS_SUCCESS
    (package / "inner.py").write_text("from walled.outer import X\n")
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) != EXIT_STATUS_SUCCESS


def test_the_kernel_contract_forbids_every_tactic_the_table_lists():
    forbidden = {m for c in _contracts() if c["source_modules"] == ["semantics.proof"] for m in c["forbidden_modules"]}
    listed, _ = _documented()
    tactics = {f.removesuffix(".py").replace("/", ".") for f, (_, role) in listed.items() if role == "tactic"}
    assert tactics and tactics <= forbidden, sorted(tactics - forbidden)


def test_every_trusted_file_is_listed_with_its_role():
    listed, _ = _documented()
    actual = {r[0]: r for r in trusted_base.rows()}
    assert set(actual) == set(listed), (sorted(set(actual) - set(listed)), sorted(set(listed) - set(actual)))
    for name, (_, role) in listed.items():
        assert role == actual[name][2], f"{name} is {actual[name][2]} in bench/trusted_base.py, {role} in the doc"


@pytest.mark.parametrize("role", trusted_base.ROLES)
def test_the_line_counts_are_true_within_the_stated_tolerance(role):
    listed, totals = _documented()
    rows = [r for r in trusted_base.rows() if r[2] == role]
    for name, lines, _, _ in rows:
        written = listed[name][0]
        assert abs(written - lines) <= max(FILE_SLACK, FILE_RATIO * lines), \
            f"{name}: {lines} lines, the table says {written}; run python bench/trusted_base.py --write"
    actual = sum(r[1] for r in rows)
    assert abs(totals[role] - actual) <= TOTAL_RATIO * actual


def test_the_kernel_stays_small():
    listed, _ = _documented()
    kernel = sum(lines for f, (lines, _) in listed.items() if f.startswith("semantics/proof/"))
    assert 0 < kernel <= 1000
