"""README documents the command line as it is (issue 19: "README matches every exit code and option").

Tools outside the repo read README to drive LARK, so an option that the CLI has and README does not name, or
a verdict's exit status that README states differently from the CLI's own help, is a contract drift."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from orchestrator.cli import main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
OPTIONS = [(name, opt) for name, cmd in main.commands.items() for p in cmd.params if isinstance(p, click.Option)
           for opt in p.opts if opt.startswith("--")]


def test_every_command_is_documented() -> None:
    missing = [name for name in main.commands if f"lark {name}" not in README]
    assert not missing, f"commands README does not show: {missing}"


@pytest.mark.parametrize(("command", "option"), OPTIONS, ids=[f"{c} {o}" for c, o in OPTIONS])
def test_every_option_is_documented(command: str, option: str) -> None:
    assert re.search(rf"{re.escape(option)}(?![\w-])", README), f"README never names `lark {command} {option}`"


def test_the_exit_statuses_of_verify_are_the_ones_its_help_states() -> None:
    stated = "0 verified, 1 refuted, 2 unknown, 3 error"
    assert stated in " ".join((main.commands["verify"].help or "").split())
    assert f"Exit status of `lark verify`: {stated}" in README
