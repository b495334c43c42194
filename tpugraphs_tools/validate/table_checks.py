"""Parquet tables against their JSON Schemas (schemas/<table>.schema.json), column at a time.

Types come from the parquet footer; nulls, enums, patterns and minimums are vectorised polars
masks, and each rule reports its first offending row and a count. Unique keys
(``x-unique``) and foreign keys (``x-foreign-keys``) come from the same schema files, so a table
another engineer adds (e.g. partitions) is validated without code here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def _first(mask: pl.Series) -> tuple[int, int] | None:
    """(first True row, number of True rows) of a boolean mask (nulls count as False)."""
    where = mask.fill_null(False).arg_true()
    return (int(where[0]), len(where)) if len(where) else None


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    if actual == expected or pa.types.is_null(actual):
        return True
    return pa.types.is_large_string(actual) and pa.types.is_string(expected)


def _open(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except Exception as exc:
        raise TablePartError(str(exc)) from None


def _read(pf: pq.ParquetFile, columns: list[str]) -> pa.Table:
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
        with _open(path) as pf:
            names = pf.schema_arrow.names
            num_rows = pf.metadata.num_rows

            def column(field: str) -> pa.ChunkedArray:
                return _read(pf, [field]).column(0)

            check_schema(names, column, name, rel, checked)
            table = _read(pf, names if columns is None else
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


def check_schema(names: Sequence[str], column: Callable[[str], pa.ChunkedArray], name: str,
                 rel: str, report: Report) -> None:
    """Column presence/types, nulls, enums, patterns, minimums and the unique key of a table
    with columns ``names``; ``column(name)`` reads one (each is read once, then dropped)."""
    schema = load_schema(name)
    expected = arrow_schema(name)
    for field in expected:
        prop: dict[str, Any] = schema["properties"][field.name]
        if field.name not in names:
            if not field.nullable:
                report.emit("dataset.schema_column_missing", "required column missing", rel,
                            key=field.name)
            continue
        values = column(field.name)
        if not _same_type(values.type, field.type):
            report.emit("dataset.schema_type", f"type {values.type}, expected {field.type}",
                        rel, key=field.name)
            continue
        _check_values(values, field, prop, rel, report)
        del values
    for extra in sorted(set(names) - set(expected.names)):
        report.emit("dataset.schema_column_unknown", f"column not in schemas/{name}.schema.json",
                    rel, key=extra)
    unique = schema.get("x-unique", [])
    if unique and all(c in names for c in unique):
        keys = pl.from_arrow(pa.table({c: column(c) for c in unique}))
        assert isinstance(keys, pl.DataFrame)
        _report_duplicates(keys, unique, rel, report)


def _check_values(column: pa.ChunkedArray, field: pa.Field, prop: dict[str, Any], rel: str,
                  report: Report) -> None:
    """Nulls, enum, pattern and minimum of one column (polars: pyarrow.compute's kernels cost
    ~35 MB of RSS on first use, more than the tables themselves)."""
    key = field.name
    series = pl.Series(key, column) if len(column) else pl.Series(key, [], dtype=pl.Null)
    if not field.nullable and column.null_count:
        i, count = _first(series.is_null())  # type: ignore[misc]
        report.emit("dataset.schema_null", f"null in required column{_more(count)}", rel,
                    key=key, index=i)
    if pa.types.is_null(column.type) or column.null_count == len(column):
        return
    enum = prop.get("enum")
    if enum is not None:
        hit = _first(series.is_not_null() & ~series.is_in([v for v in enum if v is not None]))
        if hit is not None:
            i, count = hit
            report.emit("dataset.schema_enum", f"{series[i]!r} not one of {enum}"
                        f"{_more(count)}", rel, key=key, index=i)
    pattern = prop.get("pattern")
    if pattern is not None and series.dtype == pl.String:
        # ids repeat (a graph_id on each of its config rows): match each value once
        values = series.drop_nulls().unique()
        bad = values.filter(~values.str.contains(pattern))
        hit = _first(series.is_in(bad.implode())) if len(bad) else None
        if hit is not None:
            i, count = hit
            report.emit("dataset.schema_pattern", f"{series[i]!r} does not match "
                        f"{pattern}{_more(count)}", rel, key=key, index=i)
    minimum = prop.get("minimum")
    if minimum is not None and series.dtype.is_numeric():
        hit = _first(series < minimum)
        if hit is not None:
            i, count = hit
            report.emit("dataset.schema_minimum", f"{series[i]} < minimum {minimum}"
                        f"{_more(count)}", rel, key=key, index=i)


def check_unique(df: pl.DataFrame, name: str, rel: str, report: Report) -> None:
    """The ``x-unique`` key over a table read from several parts (each checked alone too)."""
    unique = load_schema(name).get("x-unique", [])
    if unique and all(c in df.columns for c in unique):
        _report_duplicates(df.select(unique), unique, rel, report)


def _report_duplicates(df: pl.DataFrame, unique: list[str], rel: str, report: Report) -> None:
    df = df.with_row_index("__row")
    dup = df.filter(pl.struct(unique).is_duplicated()).drop_nulls(unique)
    if not dup.height:
        return
    groups = dup.group_by(unique, maintain_order=True).agg(pl.col("__row"))
    first = groups.row(0, named=True)
    rows = first["__row"]
    key_val = {c: first[c] for c in unique}
    more = f" ({groups.height} keys repeat in all)" if groups.height > 1 else ""
    report.emit("dataset.schema_duplicate_id", f"{key_val} at rows {rows[:5]}{more}", rel,
                key=",".join(unique), index=int(rows[1]))


def release_unused_memory() -> None:
    """Hand the memory Arrow's allocator keeps after a part back to the system.

    mimalloc/jemalloc keep freed pages for reuse, per thread; part after part the kept
    pages pile up (more on machines with many cores), so without this validate's peak RSS
    grew with the number of parts, i.e. with the number of graphs.
    """
    pa.default_memory_pool().release_unused()


def foreign_key_columns(name: str) -> list[str]:
    """The columns of table ``name`` that ``x-foreign-keys`` points elsewhere."""
    return list(load_schema(name).get("x-foreign-keys", {}))


def check_foreign_keys(name: str, df: pl.DataFrame, rel: str,
                       tables: dict[str, pl.DataFrame], report: Report) -> None:
    """``x-foreign-keys`` of table ``name`` (or one part of it, ``df``): {"col":
    "other_table.col"} against the whole ``tables``; nulls are allowed."""
    for col, target in load_schema(name).get("x-foreign-keys", {}).items():
        other, other_col = target.split(".", 1)
        ref = tables.get(other)
        if col not in df.columns or ref is None or other_col not in ref.columns:
            continue
        known = ref.get_column(other_col).drop_nulls().unique().implode()
        bad = df.with_row_index("__row").filter(
            pl.col(col).is_not_null() & ~pl.col(col).is_in(known))
        if bad.height:
            row = bad.row(0, named=True)
            more = f" ({bad.height} rows in all)" if bad.height > 1 else ""
            report.emit("dataset.schema_foreign_key", f"{row[col]!r} not in {target}{more}",
                        rel, key=col, index=int(row["__row"]))
