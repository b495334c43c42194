"""Per-graph work journal: measured config rows appended durably as they arrive.

A collection killed at any moment (``kill -9`` included) loses at most the config being
measured: every finished row is one fsync'ed JSON line in ``<dataset>/.tgt-work/<graph>.jsonl``.
The dataset itself only changes by atomic commits of whole graphs, so nothing half-written is
ever visible there; the journal is removed once its graph is committed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from tpugraphs_tools.collect.rows import ConfigRow, config_row
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.store import WORK_DIR


class JournalHeader(TypedDict):
    """The arguments a resumed collection must share with the interrupted one."""

    strategy: str
    seed: int
    warmup: int
    repeats: int
    rtol: float | None
    timing: NotRequired[str]  # only when not the default engine (old journals lack it)


class PartialGraph(TypedDict):
    """A graph whose collection was interrupted: its journal's header and rows so far."""

    header: Mapping[str, Any]  # as the journal's first line holds it ({} if unreadable)
    statuses: dict[str, int]   # journaled rows by status (``ok``, ``control``, errors...)


class ConfigJournal:
    def __init__(self, root: Path, graph_id: str, header: JournalHeader) -> None:
        self.path = root / WORK_DIR / f"{graph_id}.jsonl"
        self.header = header

    def load(self) -> dict[int, ConfigRow]:
        """Rows already measured; a torn last line (killed mid-write) is ignored."""
        if not self.path.exists():
            return {}
        lines = self.path.read_bytes().split(b"\n")
        rows: dict[int, ConfigRow] = {}
        for number, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                if number == len(lines) - 1 or not any(x.strip() for x in lines[number + 1:]):
                    break  # the write that was interrupted
                raise DatasetError(f"{self.path}: line {number + 1} is corrupt") from None
            if number == 0:
                if record.get("header") != self.header:
                    raise DatasetError(
                        f"{self.path}: a partial collection with different arguments exists "
                        f"({record.get('header')}); rerun with the same arguments, or delete "
                        "the file to start this graph over")
                continue
            row = config_row(record, where=f"{self.path}: line {number + 1}")
            rows[row["config_index"]] = row
        return rows

    def append(self, row: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists() or self.path.stat().st_size == 0
        with open(self.path, "ab") as f:
            if new:
                f.write(json.dumps({"header": self.header}).encode() + b"\n")
            f.write(json.dumps(row, sort_keys=True).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # other graphs' journals may still be there
            self.path.parent.rmdir()


def partial_collections(root: Path) -> dict[str, PartialGraph]:
    """graph_id → {header, journaled rows by status} for every unfinished graph."""
    out: dict[str, PartialGraph] = {}
    work = root / WORK_DIR
    if not work.is_dir():
        return out
    for path in sorted(work.glob("*.jsonl")):
        lines = [x for x in path.read_bytes().split(b"\n") if x.strip()]
        header: Mapping[str, Any] = {}
        statuses: dict[str, int] = {}
        for number, raw in enumerate(lines):
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if number == 0:
                header = record.get("header", {})
            else:
                status = str(record.get("status", "unknown"))
                statuses[status] = statuses.get(status, 0) + 1
        out[path.stem] = {"header": header, "statuses": dict(sorted(statuses.items()))}
    return out
