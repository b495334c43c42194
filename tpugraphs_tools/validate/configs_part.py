"""One configs part in bounded memory, however many rows it holds.

Two passes over the part's Parquet file. The first checks the schema one column at a time,
one batch of rows at a time, and finds the last row of each graph. The second reads the
columns the row rules use, in batches of whole graphs (``store.WholeKeys``): each batch goes
through the unique key, the foreign keys and the row rules, then the npz files of its graphs
are checked. Memory is a batch (64k rows) plus the rules' first offending rows, never the
part: a merged part of millions of rows costs what a small one does.

Findings are held until the part is read, then reported in the order a whole-part read gave:
row count, schema, unique key, foreign keys, keys in two parts, row rules, then each graph's
npz in graphs-table order. An unreadable part reports only that, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.errors import TableConvertError, TablePartError
from tpugraphs_tools.store import ROW_GROUP_ROWS, Part, WholeKeys, last_rows
from tpugraphs_tools.validate import table_checks
from tpugraphs_tools.validate.arrow_memory import release_unused_memory
from tpugraphs_tools.validate.config_rules import CONFIG_COLUMNS, ConfigRules
from tpugraphs_tools.validate.graph_files import Checked, GraphFiles
from tpugraphs_tools.validate.report import Report

NAME = "configs"
BATCH_ROWS = ROW_GROUP_ROWS  # rows read at once (tests lower it to split graphs)


def _batches(pf: pq.ParquetFile, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """``columns`` in batches, a row group at a time: read across row groups, Arrow's reader
    buffers ahead and its allocator keeps the pages (RSS grew with the part)."""
    try:
        for group in range(pf.num_row_groups):
            yield from pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[group],
                                       columns=columns, use_threads=False)
            release_unused_memory()
    except Exception as exc:  # a corrupt page or a truncated file
        raise TablePartError(str(exc)) from None


class _Part:
    """The state of one part's check: what its batches found, not yet reported."""

    def __init__(self, part: Part, key: str, tables: dict[str, pl.DataFrame],
                 graph_files: GraphFiles) -> None:
        self.part, self.key, self.graph_files = part, key, graph_files
        self.schema = Report(root="")
        self.unique = table_checks.Duplicates(table_checks.unique_key(NAME))
        self.foreign = table_checks.ForeignKeys(NAME, tables)
        self.rules = ConfigRules(part.file)
        self.checked: list[Checked] = []
        self.keys: list[Any] = []  # the part's key values, in order of first row

    def first_pass(self, pf: pq.ParquetFile) -> WholeKeys:
        """Schema, a column and a batch at a time; each key's last row."""
        names = pf.schema_arrow.names

        def batches(column: str) -> Iterator[pa.Array]:
            return (b.column(0) for b in _batches(pf, [column]))

        table_checks.check_schema(names, table_checks.footer_types(pf), batches, NAME,
                                  self.part.file, self.schema)
        if self.key not in names:
            return WholeKeys(self.key, {})
        last, null_last = last_rows(batches(self.key), self.key)
        self.keys = list(last)
        return WholeKeys(self.key, last, null_last)

    def second_pass(self, pf: pq.ParquetFile, whole: WholeKeys) -> None:
        names = pf.schema_arrow.names
        wanted = {*CONFIG_COLUMNS, self.key, *self.unique.unique,
                  *table_checks.foreign_key_columns(NAME)}
        columns = [c for c in names if c in wanted]
        offset = 0
        for batch in _batches(pf, columns):
            try:
                frame = pl.from_arrow(batch)
            except Exception as exc:
                raise TableConvertError(str(exc)) from None
            assert isinstance(frame, pl.DataFrame)
            ready = whole.push(frame.with_row_index("__row", offset))
            offset += batch.num_rows
            if ready is not None:
                self._check(ready)
        rest = whole.rest()
        if rest is not None:
            self._check(rest)

    def _check(self, rows: pl.DataFrame) -> None:
        """Every rule on a batch of whole graphs, then those graphs' npz files."""
        # graph_id is part of the unique key, so a batch of whole graphs holds every row of
        # each of its keys
        if self.unique.unique and all(c in rows.columns for c in self.unique.unique):
            self.unique.add(rows.select("__row", *self.unique.unique))
        self.foreign.add(rows)
        refs = self.rules.add(rows)
        del rows
        self.checked.extend(self.graph_files.run(list(refs.by_graph), refs))
        release_unused_memory()

    def read(self, report: Report, rows: int) -> None:
        """The part was read: its row count and schema findings."""
        report.files_checked += 1
        if self.part.rows is not None and rows != self.part.rows:
            report.emit("dataset.row_count_mismatch",
                        f"{rows} rows, manifest says {self.part.rows}", self.part.file)
        for finding in self.schema.findings:
            report.add(finding)

    def report(self, report: Report, seen: dict[Any, str]) -> None:
        rel = self.part.file
        self.unique.finish(rel, report)
        self.foreign.finish(rel, report)
        for value in self.keys:
            if value in seen:
                report.emit("dataset.schema_duplicate_id", f"{self.key} {value!r} has rows "
                            f"in two parts: {seen[value]} and {rel}", rel, key=self.key)
            seen.setdefault(value, rel)
        self.rules.finish(report)
        self.graph_files.add(self.checked)


def check_part(root: Path, part: Part, key: str, tables: dict[str, pl.DataFrame],
               graph_files: GraphFiles, report: Report, seen: dict[Any, str]) -> None:
    """Check configs part ``part`` (its rows, then its graphs' npz); ``seen``: key value →
    the part that first held it, across parts."""
    state = _Part(part, key, tables, graph_files)
    try:
        with table_checks.open_parquet(root / part.file) as pf:
            rows = pf.metadata.num_rows
            whole = state.first_pass(pf)
            state.second_pass(pf, whole)
    except TablePartError as exc:  # truncated footer, corrupt page, not parquet
        report.emit("structure.unreadable", f"unreadable parquet: {exc}", part.file)
        return
    except TableConvertError as exc:
        state.read(report, rows)
        report.emit("structure.unreadable", f"cannot convert table: {exc}", part.file)
        return
    state.read(report, rows)
    state.report(report, seen)
