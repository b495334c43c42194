"""Every runtime dependency in pyproject.toml is imported by the package (no dead weight)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import tpugraphs_tools

ROOT = Path(tpugraphs_tools.__file__).parents[1]
MODULE_OF = {"pyyaml": "yaml", "protobuf": "google.protobuf"}  # distributions whose import name differs


def _declared() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower()
            for spec in project["dependencies"]]


def test_every_declared_dependency_is_imported() -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "tpugraphs_tools").rglob("*.py"))
    unused = []
    for dist in _declared():
        module = MODULE_OF.get(dist, dist.replace("-", "_"))
        if not re.search(rf"^\s*(import|from) {re.escape(module)}\b", sources, re.MULTILINE):
            unused.append(dist)
    assert _declared() and unused == []
