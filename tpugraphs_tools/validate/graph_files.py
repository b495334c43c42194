"""Each graph row's npz (streamed, one at a time) and HLO file, then orphaned npz files.

A graph is checked when the configs part holding its rows has been read (its npz_row values
are checked against the npz's config count). Results are held until the part's table
findings are reported, then added in graphs-table order, so findings come out in the same
order however the part was read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from tpugraphs_tools.format import KINDS, TPUGRAPHS_SOURCE
from tpugraphs_tools.parallel import Pool
from tpugraphs_tools.validate import dataset_rows
from tpugraphs_tools.validate.jobs import NpzJob, NpzResult, merge, run_npz_job
from tpugraphs_tools.validate.report import Finding, Report


class Places:
    """Row of a table read from several parts → (part file, row within that part)."""

    def __init__(self) -> None:
        self.starts: list[tuple[int, str]] = []

    def add(self, start: int, rel: str) -> None:
        self.starts.append((start, rel))

    def __call__(self, row: int) -> tuple[str, int]:
        place = (dataset_rows.GRAPHS, row)
        for start, rel in self.starts:
            if row >= start:
                place = (rel, row - start)
        return place


@dataclass(frozen=True)
class Checked:
    """One graph's npz result and its graphs-row↔npz findings, not yet reported."""

    position: int
    result: NpzResult
    findings: tuple[Finding, ...]


class GraphFiles:
    """Each graph row's npz (streamed, one at a time) and HLO file, then orphans."""

    def __init__(self, root: Path, graphs: pl.DataFrame | None, locate: Places,
                 manifest: dict, report: Report, max_array_bytes: int, pool: Pool) -> None:
        self.root, self.manifest, self.report, self.locate = root, manifest, report, locate
        self.max_array_bytes, self.pool = max_array_bytes, pool
        # graph_id -> row position only; a row's dict is built when its graph is checked, so
        # the graphs stay in the compact columnar frame instead of one dict per graph
        self.graphs = graphs if graphs is not None else pl.DataFrame()
        has_ids = "graph_id" in self.graphs.columns
        ids = self.graphs.get_column("graph_id").to_list() if has_ids else [None] * len(self.graphs)
        self.order = [str(g) for g in ids]
        self.positions = {g: i for i, g in enumerate(self.order)}
        self.done: set[str] = set()
        self.referenced: set[str] = set()

    def _row(self, graph_id: str) -> tuple[int, dict[str, Any]]:
        position = self.positions[graph_id]
        return position, self.graphs.row(position, named=True)

    def _job(self, graph_id: str) -> NpzJob:
        """The graph's HLO/npz presence findings, and its npz to check if it exists."""
        position, row = self._row(graph_id)
        graphs_rel, index = self.locate(position)
        root, listed = self.root, self.manifest["files"]
        pre = Report(root="")
        hlo = row.get("hlo_file")
        if hlo and not (root / hlo).is_file() and hlo not in listed:
            pre.emit("dataset.hlo_missing", f"graph {row.get('graph_id')!r} has no HLO file "
                     f"{hlo}", graphs_rel, key="hlo_file", index=index)
        elif hlo:
            _absolute_in_hlo(root, hlo, pre)
        _absolute_in_row(row, graphs_rel, index, pre)
        rel = row.get("npz_file")
        if rel:
            self.referenced.add(rel)
        path: Path | None = root / rel if rel else None
        if not rel or not (root / rel).is_file():
            if not rel or rel not in listed:
                pre.emit("dataset.npz_missing", f"graph {row.get('graph_id')!r} npz "
                         f"{rel!r} does not exist", graphs_rel, key="npz_file", index=index)
            path = None
        collection = row.get("collection")
        return NpzJob(path, str(rel), collection if collection in KINDS else None,
                      False, self.max_array_bytes, tuple(pre.findings), graph_id,
                      partial_layouts_ok=row.get("source") == TPUGRAPHS_SOURCE)

    def run(self, graph_ids: Iterable[str], refs: dataset_rows.ConfigRefs) -> Iterator[Checked]:
        """Check the npz of the graphs not checked yet (refs: their config rows), in
        graphs-table order; nothing is reported until :meth:`add`."""
        todo = sorted((g for g in set(graph_ids) if g not in self.done and g in self.positions),
                      key=lambda g: self.positions[g])  # graphs-table order: deterministic
        for result in self.pool.map(run_npz_job, (self._job(g) for g in todo)):
            position, row = self._row(result.job.tag)
            graphs_rel, index = self.locate(position)
            found = Report(root="")
            if result.summary is not None and row.get("graph_id") is not None:
                dataset_rows.check_graph_against_npz(row, index, result.summary, refs, found,
                                                     graphs_rel)
            yield Checked(position, result, tuple(found.findings))

    def add(self, checked: Iterable[Checked]) -> None:
        """Report checked graphs in graphs-table order (until the report is full)."""
        checked = sorted(checked, key=lambda c: c.position)
        self.done.update(item.result.job.tag for item in checked)
        for item in checked:
            if self.report.full:
                return
            merge(item.result, self.report)
            for finding in item.findings:
                self.report.add(finding)

    def finish(self) -> None:
        """Graphs without config rows, then npz files no graph row references."""
        for checked in self.run(self.order, dataset_rows.ConfigRefs("configs")):
            if self.report.full:
                return
            self.add([checked])
        if self.report.full:
            return
        listed = self.manifest["files"]
        for rel in sorted(listed):
            if (rel.startswith("graphs/") and rel.endswith(".npz")
                    and rel not in self.referenced and (self.root / rel).is_file()):
                self.report.emit("dataset.npz_orphan", "npz that no graphs.parquet row "
                                 "references", rel)


def _absolute_in_hlo(root: Path, rel: str, report: Report) -> None:
    """Warn about source file names in a stored HLO file that are absolute paths."""
    from tpugraphs_tools.hlo import stored_source_files

    try:
        names = stored_source_files((root / rel).read_bytes(), rel)
    except Exception:  # unreadable (protobuf DecodeError, ...): other checks say so
        return
    found = sorted({n for n in names if n.startswith("/")})
    if found:
        report.emit("dataset.absolute_path", f"{len(found)} absolute source file name(s), "
                    f"e.g. {found[0]}", rel)


def _absolute_in_row(row: dict[str, Any], rel: str, index: int, report: Report) -> None:
    """Warn about a graph row's columns that hold absolute paths."""
    from tpugraphs_tools.hlo import absolute_paths

    for column in ("source_path", "program_args", "xla_flags"):
        value = row.get(column)
        found = absolute_paths(value) if isinstance(value, str) else []
        if found:
            report.emit("dataset.absolute_path", f"{column} holds {found[0]}", rel,
                        key=column, index=index)
