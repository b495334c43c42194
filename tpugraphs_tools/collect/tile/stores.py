"""Where a tile collection's kernels go as they are measured (``program.py``).

In memory for the library call (``collect_tile``); journaled row by row and committed kernel by
kernel into a dataset for ``tgt collect`` (``run.py``), where the store also knows what an
interrupted run left.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import polars as pl

from tpugraphs_tools.collect.graphs import CollectedGraph, write_graphs
from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.rows import ConfigRow
from tpugraphs_tools.collect.summary import failure_counts
from tpugraphs_tools.collect.tile.record import ProgramRecord, write_program
from tpugraphs_tools.format import Kind
from tpugraphs_tools.measure import OK, Status
from tpugraphs_tools.store import Dataset


class KernelStore(Protocol):
    """Where a program's kernels go as they are measured: kept in memory
    (:func:`collect_tile`), or journaled and committed kernel by kernel into a dataset
    (:class:`DatasetStore`), which also knows what an interrupted run left."""

    def stored(self, graph_id: str) -> bool:
        """Committed by an earlier run: not measured again."""
        ...

    def skipped(self, name: str) -> str | None:
        """Why an earlier run did not store kernel ``name`` (None: it did not settle it)."""
        ...

    def measured(self, graph_id: str) -> list[ConfigRow]:
        """Rows an earlier run measured of a kernel it did not finish."""
        ...

    def row(self, graph_id: str, row: ConfigRow) -> None:
        """A row measured now."""
        ...

    def store(self, graph: CollectedGraph, rows: list[ConfigRow]) -> None:
        """A finished kernel: its graph and config rows."""
        ...

    def skip(self, name: str, reason: str) -> None:
        """A finished kernel that is not stored, and why."""
        ...


class MemoryStore:
    """A :class:`KernelStore` that keeps the stored kernels in a list, nothing to resume."""

    def __init__(self) -> None:
        self.graphs: list[tuple[CollectedGraph, list[ConfigRow]]] = []

    def stored(self, graph_id: str) -> bool:
        return False

    def skipped(self, name: str) -> str | None:
        return None

    def measured(self, graph_id: str) -> list[ConfigRow]:
        return []

    def row(self, graph_id: str, row: ConfigRow) -> None:
        pass

    def store(self, graph: CollectedGraph, rows: list[ConfigRow]) -> None:
        self.graphs.append((graph, rows))

    def skip(self, name: str, reason: str) -> None:
        pass


@dataclass
class KernelsDone:
    """What :func:`measure_kernels` did: kernels stored now, skipped, and counts."""

    stored: list[tuple[CollectedGraph, list[ConfigRow]]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    restarts: int = 0
    tried: Counter[Status] = field(default_factory=Counter)
    instances: dict[str, list[str]] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)   # graph ids committed before


class DatasetStore:
    """A :class:`KernelStore` over a dataset: journals per kernel, a commit per kernel, the
    program record (``record.py``) for kernels not stored."""

    def __init__(self, dataset: Dataset, path: Path, record: ProgramRecord,
                 committed: set[str], keep_source_paths: bool = False) -> None:
        self.dataset = dataset
        self.keep_source_paths = keep_source_paths  # store this machine's paths (opt-in)
        self.path = path
        self.record = record
        self.committed = committed
        self._journals: dict[str, ConfigJournal] = {}
        self.continued: dict[str, int] = {}   # graph id -> rows resumed from its journal
        self.resumed_ok: dict[str, int] = {}  # ... of which ok
        self.failures: Counter[str] = Counter()  # rows measured now, by reason

    def journal(self, graph_id: str) -> ConfigJournal:
        if graph_id not in self._journals:
            self._journals[graph_id] = ConfigJournal(self.dataset.root, graph_id,
                                                     self.record["header"])
        return self._journals[graph_id]

    def stored(self, graph_id: str) -> bool:
        return graph_id in self.committed

    def skipped(self, name: str) -> str | None:
        return self.record["skipped"].get(name)

    def measured(self, graph_id: str) -> list[ConfigRow]:
        rows = list(self.journal(graph_id).load().values())
        if rows:
            self.continued[graph_id] = len(rows)
            self.resumed_ok[graph_id] = sum(1 for r in rows if r["status"] == OK)
        return rows

    def row(self, graph_id: str, row: ConfigRow) -> None:
        self.journal(graph_id).append(row)
        self.failures.update(failure_counts([row]))

    def store(self, graph: CollectedGraph, rows: list[ConfigRow]) -> None:
        graph = replace(graph, keep_source_paths=self.keep_source_paths)
        journal = self.journal(graph.graph_id)
        write_graphs(self.dataset, [graph], configs={graph.graph_id: rows},
                     journal=journal.path)
        self.committed.add(graph.graph_id)
        journal.remove()  # its folder, when no other kernel's journal is left

    def skip(self, name: str, reason: str) -> None:
        self.record["skipped"][name] = reason
        write_program(self.path, self.record)
        for entry in self.record["kernels"]:
            if entry["name"] == name:
                self.journal(entry["graph_id"]).remove()

    def finish(self) -> None:
        """Every kernel settled: the program needs no record any more, nor any kernel its
        journal (a skipped kernel's, when a run was killed between recording the skip and
        removing the journal)."""
        for entry in self.record["kernels"]:
            self.journal(entry["graph_id"]).remove()
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()


def committed_kernels(dataset: Dataset, parent_id: str) -> pl.DataFrame:
    """The graph rows of the kernels of ``parent_id`` committed so far."""
    graphs = dataset.graphs()
    if graphs.height == 0:
        return graphs
    return graphs.filter((pl.col("collection") == Kind.TILE.value)
                         & (pl.col("parent_graph_id") == parent_id))
