"""Where a tile collection's kernels go as they are measured (``program.py``).

In memory for the library call (``collect_tile``); journaled row by row and committed kernel by
kernel into a dataset for ``tgt collect`` (``run.py``), where the store also knows what an
interrupted run left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from tpugraphs_tools.collect.graphs import CollectedGraph
from tpugraphs_tools.collect.rows import ConfigRow
from tpugraphs_tools.measure import Status


class KernelStore(Protocol):
    """Where a program's kernels go as they are measured: kept in memory
    (:func:`collect_tile`), or journaled and committed kernel by kernel into a dataset
    (``run.py``), which also knows what an interrupted run left."""

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
