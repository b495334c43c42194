"""Every ``tgt`` command's ``--help`` against a recorded copy.

A restructuring of the CLI (flags generated from records, options moved between modules) must
leave what a user reads unchanged; a change that means to alter a help text re-records it
(``python tests/cli/test_help_goldens.py``) in the same commit, and the diff shows the change.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main

GOLDEN_DIR = Path(__file__).parent / "data" / "help"
# wide and fixed: click wraps help text at the terminal's width
RUNNER = CliRunner(env={"COLUMNS": "100"})
COMMANDS = ("", *sorted(main.commands))


def help_text(command: str) -> str:
    args = [command, "--help"] if command else ["--help"]
    result = RUNNER.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def golden(command: str) -> Path:
    return GOLDEN_DIR / f"{command or 'tgt'}.txt"


def test_every_command_has_a_golden() -> None:
    assert sorted(p.stem for p in GOLDEN_DIR.glob("*.txt")) == sorted(
        golden(c).stem for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_text_unchanged(command: str) -> None:
    expected = golden(command).read_text()
    assert help_text(command) == expected, (
        f"`tgt {command} --help` changed; if on purpose, re-record with "
        "`python tests/cli/test_help_goldens.py`")


if __name__ == "__main__":  # re-record
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        golden(name).write_text(help_text(name))
    sys.exit(0)
