"""One executor option set (``--executor``/``--address``) for every command that spreads work."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.parallel import EXECUTORS

COMMANDS = ("collect", "import", "validate")


@pytest.mark.parametrize("command", COMMANDS)
def test_the_executors_are_the_pools(command: str) -> None:
    params = {p.name: p for p in main.commands[command].params}
    assert isinstance(params["executor"].type, click.Choice)
    assert tuple(params["executor"].type.choices) == EXECUTORS
    assert params["executor"].default == "local" and params["address"].default is None


@pytest.mark.parametrize("command", COMMANDS)
def test_an_address_without_ray_is_refused(command: str, tmp_path: Path) -> None:
    args = {"collect": ["--program", "mlp"], "import": [str(tmp_path), "--out",
                                                        str(tmp_path / "d")],
            "validate": [str(tmp_path)]}[command]
    result = CliRunner().invoke(main, [command, *args, "--address", "h:6379"])
    assert result.exit_code == 2 and "give it with --executor ray" in result.output
    assert not (tmp_path / "d").exists()
