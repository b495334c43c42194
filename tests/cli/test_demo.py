"""``make demo`` stays short and ends with the next three commands, each one a real command
line of today's tgt (its options parsed here, as the shell would hand them over)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from tpugraphs_tools.cli import main

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def _demo_recipe() -> list[str]:
    """The demo target's recipe lines, tab and make's ``@`` taken off."""
    lines = MAKEFILE.read_text().splitlines()
    start = lines.index("demo: $(STAMP)") + 1
    recipe = []
    for line in lines[start:]:
        if not line.startswith("\t"):
            break
        recipe.append(line[1:].removeprefix("@"))
    return recipe


def _next_commands(recipe: list[str]) -> list[list[str]]:
    """The ``tgt ...`` lines the demo echoes at its end, split as a shell would (the
    ``# why`` comment after each cut off)."""
    echoed = [shlex.split(line)[1] for line in recipe if line.startswith("echo ")]
    return [shlex.split(text, comments=True) for text in echoed
            if text.strip().startswith("tgt ")]


def test_demo_collects_and_validates_without_listing_every_program() -> None:
    """It printed all ~250 lines of `tgt programs` before collecting anything."""
    run = [line for line in _demo_recipe() if not line.startswith(("echo", "rm "))]
    assert [shlex.split(line)[:2] for line in run] == [["$(BIN)/tgt", "collect"],
                                                      ["$(BIN)/tgt", "validate"]]


def test_demo_ends_with_three_next_commands_that_parse(tmp_path: Path, monkeypatch) -> None:
    recipe = _demo_recipe()
    commands = _next_commands(recipe)
    assert len(commands) == 3
    assert all(recipe[-1 - i].startswith("echo ") for i in range(4))  # the last lines
    assert [c[1] for c in commands] == ["report", "programs", "collect"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo-data").mkdir()
    for words in commands:
        assert words[0] == "tgt"
        command = main.commands[words[1]]
        with click.Context(main) as parent:
            command.make_context(words[1], words[2:], parent=parent)  # raises on a bad option
