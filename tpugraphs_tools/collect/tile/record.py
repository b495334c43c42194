"""The program record of a tile collection not yet settled:
``<dataset>/.tgt-work/<parent graph id>.kernels.json``.

It holds the arguments the collection ran with (a rerun must share them), the program's kernel
list and the kernels it did not store, and why. ``run.py`` writes it before the first kernel is
measured and deletes it once every kernel is settled; ``tgt collect --status``
(``collect/status.py``) reads it to show a program's kernels by state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from tpugraphs_tools.collect.journal import JournalHeader
from tpugraphs_tools.collect.layout import journal_header
from tpugraphs_tools.collect.tile.labels import STRATEGY
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.measure import MeasureOptions
from tpugraphs_tools.store import WORK_DIR, write_bytes_atomic

KERNELS_SUFFIX = ".kernels.json"


class KernelEntry(TypedDict):
    graph_id: str
    name: str


class ProgramRecord(TypedDict):
    """``.tgt-work/<parent>.kernels.json``: a tile program not yet settled."""

    header: JournalHeader
    program: str
    kernels: list[KernelEntry]
    skipped: dict[str, str]   # kernel name -> why it is not stored


def tile_header(measure: MeasureOptions) -> JournalHeader:
    """What a resumed tile collection must share with the interrupted one."""
    return {**journal_header(measure), "strategy": STRATEGY}


def program_path(root: Path, parent_graph_id: str) -> Path:
    return root / WORK_DIR / f"{parent_graph_id}{KERNELS_SUFFIX}"


def read_program(path: Path) -> ProgramRecord:
    try:
        record: ProgramRecord = json.loads(path.read_bytes())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: unreadable ({exc}); delete it to start the program's "
                           "kernels over (committed kernels stay)") from None
    return record


def write_program(path: Path, record: ProgramRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, json.dumps(record, sort_keys=True).encode())
