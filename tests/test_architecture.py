"""The architecture rules `lint-imports` enforces stay complete (docs/architecture.md).

`lint-imports` (run by `make test`) checks the contracts; these tests check that the contracts
cover every package, so a new package cannot slip past them, that every face is honest, and
that the only import cycle is the programs registry's ("Cycles" in docs/architecture.md).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import click
import grimp
import networkx as nx
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


REGISTRY = "tpugraphs_tools.programs.registry"


def _string_imports() -> dict[tuple[str, str], int]:
    """(importer, imported) → line of each ``import_module("tpugraphs_tools...")`` with a
    literal name: imports grimp cannot see, which the registry uses for its plugins."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted((ROOT / "tpugraphs_tools").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        importer = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and node.args
                    and isinstance(node.args[0], ast.Constant)):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            target = node.args[0].value
            if name == "import_module" and str(target).startswith("tpugraphs_tools."):
                found[(importer, str(target))] = node.lineno
    return found


class _Imports:
    """Every import between tpugraphs_tools modules, at the top, in functions and under
    TYPE_CHECKING alike (grimp), plus the string imports."""

    def __init__(self) -> None:
        self.grimp = grimp.build_graph("tpugraphs_tools", cache_dir=None)
        self.strings = _string_imports()
        self.static = nx.DiGraph()
        for module in self.grimp.modules:
            self.static.add_edges_from(
                (module, imported) for imported in self.grimp.find_modules_directly_imported_by(module))
        self.edges = nx.DiGraph(self.static)
        self.edges.add_edges_from(self.strings)

    def cycles(self) -> set[frozenset[str]]:
        """Strongly connected components that hold a cycle (a self-import included)."""
        return {frozenset(c) for c in nx.strongly_connected_components(self.edges)
                if len(c) > 1 or any(self.edges.has_edge(m, m) for m in c)}

    def closed_by_strings_only(self, cycle: frozenset[str]) -> bool:
        """Without the string imports, the modules of ``cycle`` import in one direction."""
        return nx.is_directed_acyclic_graph(self.static.subgraph(cycle))

    def describe(self, cycle: frozenset[str]) -> str:
        """The cycle's modules, then each import inside it with its lines."""
        lines = [" <-> ".join(sorted(cycle))]
        for importer, imported in sorted(self.edges.subgraph(cycle).edges):
            at = [str(d["line_number"]) for d in self.grimp.get_import_details(
                importer=importer, imported=imported)]
            if (importer, imported) in self.strings:
                at.append(f"{self.strings[importer, imported]} (import_module)")
            lines.append(f"    {importer}:{','.join(at)} -> {imported}")
        return "\n".join(lines)


def test_only_the_programs_registry_is_a_cycle() -> None:
    """One cycle is accepted: the programs registry imports its plugin modules by name
    (``importlib.import_module``) and each of them imports the registry to register itself.
    Any other cycle fails, listed with the imports that close it."""
    imports = _Imports()
    cycles = imports.cycles()
    registry = {c for c in cycles if REGISTRY in c and imports.closed_by_strings_only(c)}
    assert registry, "the programs registry closes no cycle through import_module any more: " \
        "update this test and the Cycles paragraph of docs/architecture.md"
    unexpected = cycles - registry
    assert not unexpected, "import cycles:\n" + "\n".join(
        imports.describe(c) for c in sorted(unexpected, key=sorted))


def test_the_cli_loads_without_jax_or_flax() -> None:
    """``tgt --help`` builds every command's flags (baseline's from its records) without
    importing jax or flax, which cost seconds, nor pymetis (partition's); the baseline face
    is lazy for this."""
    code = ("import sys, tpugraphs_tools.cli; "
            "print(sorted({'jax', 'flax', 'optax', 'pymetis'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
