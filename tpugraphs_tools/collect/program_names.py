"""The name a user program is stored under, and the file it came from.

A user program is stored under its module's name and function (``my_program:make_fn``,
``programs.user_program_name``), the same from whatever folder ``tgt collect`` runs; the file
goes apart into the graph row's ``program_args`` as ``file`` (provenance: made portable with
the other paths unless ``--keep-source-paths``). Earlier tgt releases stored the path as given
(``../../x/my_program.py:make_fn``). A dataset that already holds a program under such a path
name keeps that name for the program's new graphs, so a split by program still sees one
program and a rerun resumes the graphs it began (their ids follow from the name).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from tpugraphs_tools.store import WORK_DIR, Dataset


def program_args_of(name: str, args: Any) -> dict[str, Any]:
    """A graph row's ``program_args``: the program's arguments, plus ``file`` for a user
    program (where it came from; never part of its name)."""
    from tpugraphs_tools.programs import get_program

    stored = args.as_dict()
    source = get_program(name).source_file
    return {**stored, "file": source} if source else stored


def is_path_name(stored: str, name: str) -> bool:
    """``stored`` names user program ``name`` (``pkg.mod:fn``) the old way: by a path to the
    module's file (``../x/mod.py:fn``, ``mod.py:fn``), same file stem and function."""
    target, sep, attr = stored.rpartition(":")
    module, _, function = name.rpartition(":")
    if not sep or stored == name or attr != function:
        return False
    if not (target.endswith(".py") or "/" in target or "\\" in target):
        return False
    return PurePath(target.replace("\\", "/")).stem == module.rpartition(".")[2]


def _stored_programs(dataset: Dataset) -> Counter[str]:
    """Program names in ``dataset``: its graph rows and its unfinished tile programs."""
    graphs = dataset.graphs()
    names: Counter[str] = Counter(graphs["program"].to_list() if graphs.height else [])
    for record in sorted((dataset.root / WORK_DIR).glob("*.kernels.json")):
        with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
            names[json.loads(record.read_text()).get("program")] += 1
    return names


def stored_name(dataset: Dataset, name: str) -> str | None:
    """The path name ``dataset`` already stores user program ``name`` under; None when it has
    none, or several (collected from different folders: which is this one cannot be told)."""
    if ":" not in name:
        return None
    found = [p for p in _stored_programs(dataset) if isinstance(p, str) and is_path_name(p, name)]
    return found[0] if len(found) == 1 else None


def names_to_keep(dataset: Dataset, programs: Iterable[str]) -> dict[str, str]:
    """Program spec (as the user wrote it) → the name to store it under, for the user
    programs ``dataset`` already names by path (empty for a new dataset)."""
    from tpugraphs_tools.programs import get_program

    kept = {}
    for spec in dict.fromkeys(programs):
        if ":" in spec and (old := stored_name(dataset, get_program(spec).name)) is not None:
            kept[spec] = old
    return kept
