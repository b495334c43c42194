"""Parquet tables against their JSON Schemas (schemas/<table>.schema.json), column at a time.

Types come from the parquet footer; nulls, enums, patterns and minimums are vectorised polars
masks, and each rule reports its first offending row and a count. Unique keys
(``x-unique``) and foreign keys (``x-foreign-keys``) come from the same schema files, so a table
another engineer adds (e.g. partitions) is validated without code here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.errors import TablePartError
from tpugraphs_tools.store import arrow_schema, load_schema, schema_dir
from tpugraphs_tools.validate.report import Report


def has_schema(name: str) -> bool:
    try:
        return (schema_dir() / f"{name}.schema.json").is_file()
    except FileNotFoundError:
        return False


def _more(count: int) -> str:
    return f" ({count} rows in all)" if count > 1 else ""


def same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    if actual == expected or pa.types.is_null(actual):
        return True
    return pa.types.is_large_string(actual) and pa.types.is_string(expected)


def open_parquet(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except Exception as exc:
        raise TablePartError(str(exc)) from None


def read_columns(pf: pq.ParquetFile, columns: list[str]) -> pa.Table:
    try:
        return pf.read(columns=columns, use_threads=False)
    except Exception as exc:
        raise TablePartError(str(exc)) from None


def read_table(path: Path, rel: str, name: str, report: Report,
               expected_rows: int | None = None, columns: Sequence[str] | None = None
               ) -> pl.DataFrame | None:
    """Schema-check one table part, then return its ``columns`` (None: all; names the part
    lacks are left out); None if unreadable (already reported).

    The part is checked one column at a time, and only the asked-for columns are held
    together afterwards: a configs part's free-text JSON columns (``config``, ``realized``)
    are never in memory at once, so validate's footprint is one column, not one table.
    """
    checked = Report(root="")  # reported only if the whole part reads
    try:
        # ParquetFile.read without threads: parts are bounded, and pq.read_table's dataset
        # machinery and thread pool cost ~40 MB of RSS on first use.
        with open_parquet(path) as pf:
            names = pf.schema_arrow.names
            num_rows = pf.metadata.num_rows

            def column(field: str) -> pa.ChunkedArray:
                return read_columns(pf, [field]).column(0)

            check_schema(names, footer_types(pf), lambda f: [column(f)], name, rel, checked)
            check_unique(names, column, name, rel, checked)
            table = read_columns(pf, names if columns is None else
                          [c for c in names if c in set(columns)])
    except TablePartError as exc:  # truncated footer, corrupt page, not parquet
        report.emit("structure.unreadable", f"unreadable parquet: {exc}", rel)
        return None
    report.files_checked += 1
    if expected_rows is not None and num_rows != expected_rows:
        report.emit("dataset.row_count_mismatch",
                    f"{num_rows} rows, manifest says {expected_rows}", rel)
    for finding in checked.findings:
        report.add(finding)
    try:
        return pl.from_arrow(table)  # type: ignore[return-value]
    except Exception as exc:
        report.emit("structure.unreadable", f"cannot convert table: {exc}", rel)
        return None


def footer_types(pf: pq.ParquetFile) -> dict[str, pa.DataType]:
    return {f.name: f.type for f in pf.schema_arrow}


def check_schema(names: Sequence[str], types: Mapping[str, pa.DataType],
                 batches: Callable[[str], Iterable[pa.Array | pa.ChunkedArray]], name: str,
                 rel: str, report: Report) -> None:
    """Column presence/types, nulls, enums, patterns and minimums of a table with columns
    ``names`` of ``types``; ``batches(name)`` yields one column's values in row order, a
    batch at a time (each is checked, then dropped). The unique key: :func:`check_unique`."""
    schema = load_schema(name)
    expected = arrow_schema(name)
    for field in expected:
        prop: dict[str, Any] = schema["properties"][field.name]
        if field.name not in names:
            if not field.nullable:
                report.emit("dataset.schema_column_missing", "required column missing", rel,
                            key=field.name)
            continue
        if not same_type(types[field.name], field.type):
            report.emit("dataset.schema_type", f"type {types[field.name]}, expected "
                        f"{field.type}", rel, key=field.name)
            continue
        rules = _ValueRules(field, prop)
        for values in batches(field.name):
            rules.update(values)
        rules.finish(rel, report)
    for extra in sorted(set(names) - set(expected.names)):
        report.emit("dataset.schema_column_unknown", f"column not in schemas/{name}.schema.json",
                    rel, key=extra)


def check_unique(names: Sequence[str], column: Callable[[str], pa.ChunkedArray], name: str,
                 rel: str, report: Report) -> None:
    """The ``x-unique`` key of a table part whose key columns ``column`` reads whole."""
    unique = unique_key(name)
    if unique and all(c in names for c in unique):
        keys = pl.from_arrow(pa.table({c: column(c) for c in unique}))
        assert isinstance(keys, pl.DataFrame)
        duplicates = Duplicates(unique)
        duplicates.add(keys.with_row_index("__row"))
        duplicates.finish(rel, report)


def unique_key(name: str) -> list[str]:
    return list(load_schema(name).get("x-unique", []))


@dataclass
class FirstRow:
    """A rule's first offending row (lowest ``__row``) and how many rows offend, summed over
    the batches a part is read in: one finding per rule, as if the part were read whole."""

    count: int = 0
    row: dict[str, Any] | None = None

    def add(self, bad: pl.DataFrame) -> None:
        """``bad``: the offending rows of one batch, in row order, with ``__row``."""
        if not bad.height:
            return
        self.count += bad.height
        first = bad.row(0, named=True)
        if self.row is None or first["__row"] < self.row["__row"]:
            self.row = first


class _Hit:
    """First True row (its value too) and the count of a mask, over batches in row order."""

    def __init__(self) -> None:
        self.count, self.index, self.value = 0, -1, None

    def add(self, offset: int, mask: pl.Series, values: pl.Series) -> None:
        where = mask.fill_null(False).arg_true()
        if len(where):
            if self.index < 0:
                self.index, self.value = offset + int(where[0]), values[int(where[0])]
            self.count += len(where)


class _ValueRules:
    """Nulls, enum, pattern and minimum of one column, fed a batch at a time (polars:
    pyarrow.compute's kernels cost ~35 MB of RSS on first use, more than the tables)."""

    def __init__(self, field: pa.Field, prop: dict[str, Any]) -> None:
        self.field, self.prop, self.rows = field, prop, 0
        self.nulls, self.enum, self.pattern, self.minimum = _Hit(), _Hit(), _Hit(), _Hit()

    def update(self, column: pa.Array | pa.ChunkedArray) -> None:
        offset, self.rows = self.rows, self.rows + len(column)
        key, prop = self.field.name, self.prop
        series = pl.Series(key, column) if len(column) else pl.Series(key, [], dtype=pl.Null)
        if not self.field.nullable and column.null_count:
            self.nulls.add(offset, series.is_null(), series)
        if pa.types.is_null(column.type) or column.null_count == len(column):
            return
        enum = prop.get("enum")
        if enum is not None:
            self.enum.add(offset, series.is_not_null()
                          & ~series.is_in([v for v in enum if v is not None]), series)
        pattern = prop.get("pattern")
        if pattern is not None and series.dtype == pl.String:
            # ids repeat (a graph_id on each of its config rows): match each value once
            values = series.drop_nulls().unique()
            bad = values.filter(~values.str.contains(pattern))
            if len(bad):
                self.pattern.add(offset, series.is_in(bad.implode()), series)
        minimum = prop.get("minimum")
        if minimum is not None and series.dtype.is_numeric():
            self.minimum.add(offset, series < minimum, series)

    def finish(self, rel: str, report: Report) -> None:
        key, prop = self.field.name, self.prop
        if self.nulls.count:
            report.emit("dataset.schema_null", f"null in required column"
                        f"{_more(self.nulls.count)}", rel, key=key, index=self.nulls.index)
        if self.enum.count:
            report.emit("dataset.schema_enum", f"{self.enum.value!r} not one of "
                        f"{prop.get('enum')}{_more(self.enum.count)}", rel, key=key,
                        index=self.enum.index)
        if self.pattern.count:
            report.emit("dataset.schema_pattern", f"{self.pattern.value!r} does not match "
                        f"{prop.get('pattern')}{_more(self.pattern.count)}", rel, key=key,
                        index=self.pattern.index)
        if self.minimum.count:
            report.emit("dataset.schema_minimum", f"{self.minimum.value} < minimum "
                        f"{prop.get('minimum')}{_more(self.minimum.count)}", rel, key=key,
                        index=self.minimum.index)


def check_unique_whole(df: pl.DataFrame, name: str, rel: str, report: Report) -> None:
    """The ``x-unique`` key over a table read from several parts (each checked alone too)."""
    unique = unique_key(name)
    if unique and all(c in df.columns for c in unique):
        duplicates = Duplicates(unique)
        duplicates.add(df.select(unique).with_row_index("__row"))
        duplicates.finish(rel, report)


class Duplicates:
    """Keys that repeat, over batches that each hold every row of the keys in them (a
    configs batch holds whole graphs, and graph_id is part of its key): the first repeated
    key (by its first repeated row) and how many keys repeat."""

    def __init__(self, unique: list[str]) -> None:
        self.unique, self.keys = unique, 0
        self.first: dict[str, Any] | None = None

    def add(self, rows: pl.DataFrame) -> None:
        """``rows``: the key columns and ``__row``, in row order."""
        dup = rows.filter(pl.struct(self.unique).is_duplicated()).drop_nulls(self.unique)
        if not dup.height:
            return
        groups = dup.group_by(self.unique, maintain_order=True).agg(pl.col("__row"))
        self.keys += groups.height
        first = groups.row(0, named=True)
        if self.first is None or first["__row"][0] < self.first["__row"][0]:
            self.first = first

    def finish(self, rel: str, report: Report) -> None:
        if self.first is None:
            return
        rows = self.first["__row"]
        key_val = {c: self.first[c] for c in self.unique}
        more = f" ({self.keys} keys repeat in all)" if self.keys > 1 else ""
        report.emit("dataset.schema_duplicate_id", f"{key_val} at rows {rows[:5]}{more}", rel,
                    key=",".join(self.unique), index=int(rows[1]))


def foreign_key_columns(name: str) -> list[str]:
    """The columns of table ``name`` that ``x-foreign-keys`` points elsewhere."""
    return list(load_schema(name).get("x-foreign-keys", {}))


def check_foreign_keys(name: str, df: pl.DataFrame, rel: str,
                       tables: dict[str, pl.DataFrame], report: Report) -> None:
    """``x-foreign-keys`` of table ``name`` (or one part of it, ``df``): {"col":
    "other_table.col"} against the whole ``tables``; nulls are allowed."""
    keys = ForeignKeys(name, tables)
    keys.add(df.with_row_index("__row"))
    keys.finish(rel, report)


class ForeignKeys:
    """``x-foreign-keys`` of table ``name`` fed a batch of rows (with ``__row``) at a time."""

    def __init__(self, name: str, tables: dict[str, pl.DataFrame]) -> None:
        self.known: dict[str, tuple[str, pl.Series]] = {}  # column -> (target, known values)
        for col, target in load_schema(name).get("x-foreign-keys", {}).items():
            other, other_col = target.split(".", 1)
            ref = tables.get(other)
            if ref is not None and other_col in ref.columns:
                self.known[col] = (target, ref.get_column(other_col).drop_nulls().unique()
                                   .implode())
        self.bad = {col: FirstRow() for col in self.known}

    def add(self, rows: pl.DataFrame) -> None:
        for col, (_, known) in self.known.items():
            if col in rows.columns:
                self.bad[col].add(rows.filter(pl.col(col).is_not_null()
                                              & ~pl.col(col).is_in(known)))

    def finish(self, rel: str, report: Report) -> None:
        for col, (target, _) in self.known.items():
            bad = self.bad[col]
            if bad.row is not None:
                more = f" ({bad.count} rows in all)" if bad.count > 1 else ""
                report.emit("dataset.schema_foreign_key", f"{bad.row[col]!r} not in "
                            f"{target}{more}", rel, key=col, index=int(bad.row["__row"]))
