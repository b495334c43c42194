"""The architecture rules `lint-imports` enforces stay complete (docs/architecture.md).

`lint-imports` (run by `make test`) checks the contracts; these tests check that the contracts
cover every package, so a new package cannot slip past them, and that every face is honest.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest

import tpugraphs_tools
from tpugraphs_tools.cli import main
from tpugraphs_tools.format import KINDS

ROOT = Path(tpugraphs_tools.__file__).parents[1]
PACKAGES = sorted(p.parent.name for p in (ROOT / "tpugraphs_tools").glob("*/__init__.py"))
MODULES = sorted(p.stem for p in (ROOT / "tpugraphs_tools").glob("*.py") if p.stem != "__init__")


def _contracts() -> list[dict[str, Any]]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_layers_contract_names_every_package_and_module() -> None:
    (layers,) = [c for c in _contracts()
                 if c["type"] == "layers" and c["containers"] == ["tpugraphs_tools"]]
    named = {name.strip() for layer in layers["layers"] for name in str(layer).split("|")}
    assert named == set(PACKAGES) | set(MODULES)


def test_every_package_has_a_face_contract() -> None:
    protected = {str(m) for c in _contracts() if c["type"] == "protected"
                 for m in c["protected_modules"]}
    assert protected == {f"tpugraphs_tools.{p}.*" for p in PACKAGES}


@pytest.mark.parametrize("package", PACKAGES)
def test_face_exports_what_it_lists(package: str) -> None:
    face = importlib.import_module(f"tpugraphs_tools.{package}")
    names = getattr(face, "__all__", None)
    assert names, f"tpugraphs_tools.{package} has no __all__"
    assert len(set(names)) == len(names)
    assert [n for n in names if not hasattr(face, n)] == []


@pytest.mark.parametrize("command", ["collect", "partition"])
def test_collection_choices_come_from_the_format(command: str) -> None:
    (option,) = [p for p in main.commands[command].params if p.name == "collection"]
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == [k.value for k in KINDS]
