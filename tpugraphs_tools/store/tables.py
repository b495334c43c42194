"""Sharded tables: each table is an ordered list of append-only Parquet parts.

A commit appends one new part per changed table and never rewrites the others, so commit cost
follows the size of the change, not of the dataset. Replacing rows (re-committing a graph)
rewrites only the parts that hold one of the replaced keys; many small parts are merged into
one when they pile up. Nothing here names a column: the key column comes from the caller
(``put_rows``) and every column from ``schemas/<table>.schema.json``.

Format 1 datasets kept each table in one file (``configs.parquet``); :func:`table_info` reads
that as a table of one part, so old datasets open unchanged and are upgraded without a rewrite
on their first commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.errors import DatasetFileError
from tpugraphs_tools.store.schema import arrow_schema

TABLES_DIR = "tables"
DEFAULT_KEY = "graph_id"
SMALL_PART_BYTES = 4 << 20  # parts below this are merged once COMPACT_AT of them exist
COMPACT_AT = 16
ROW_GROUP_ROWS = 64 * 1024


@dataclass
class Part:
    """One Parquet file of a table; ``lo``/``hi`` bound its key values (None: unknown)."""

    file: str
    rows: int
    lo: Any = None
    hi: Any = None

    def may_hold(self, keys: set[Any]) -> bool:
        if self.lo is None or self.hi is None:
            return True
        return any(self.lo <= k <= self.hi for k in keys if k is not None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "rows": self.rows}
        if self.lo is not None:
            out.update(min=self.lo, max=self.hi)
        return out


@dataclass
class TableInfo:
    """A table's parts in row order, its key column and the next free part number."""

    name: str
    key: str = DEFAULT_KEY
    parts: list[Part] = field(default_factory=list)
    next_part: int = 0

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "rows": self.rows, "next_part": self.next_part,
                "parts": [p.to_json() for p in self.parts]}

    def new_file(self, root: Path | None = None) -> str:
        """The next part's name; under ``root``, never one a file already holds (a part no
        manifest names yet is still someone's data: it is not overwritten)."""
        while True:
            rel = f"{TABLES_DIR}/{self.name}/part-{self.next_part:05d}.parquet"
            self.next_part += 1
            if root is None or not (root / rel).exists():
                return rel


def table_info(manifest: dict[str, Any], name: str, root: Path | None = None) -> TableInfo:
    """The parts of ``name`` from the manifest, either layout (format 1: ``{file, rows}``)."""
    raw = manifest.get("tables", {}).get(name)
    if not isinstance(raw, dict):
        return TableInfo(name)
    if "parts" in raw:
        parts = [Part(str(p.get("file")), int(p.get("rows") or 0), p.get("min"), p.get("max"))
                 for p in raw.get("parts") or [] if isinstance(p, dict)]
        return TableInfo(name, str(raw.get("key") or DEFAULT_KEY), parts,
                         int(raw.get("next_part") or len(parts)))
    rel = str(raw.get("file", f"{name}.parquet"))
    rows = raw.get("rows")
    exists = root is None or (root / rel).is_file()
    return TableInfo(name, DEFAULT_KEY,
                     [Part(rel, rows if isinstance(rows, int) else 0)] if exists else [])


# parts whose footer was read, with the (size, mtime) it was read at: a check per file, not per scan
_CHECKED: dict[Path, tuple[int, int]] = {}


def check_parts(root: Path, parts: list[Part]) -> None:
    """Raise :class:`DatasetFileError` naming a part that is missing or not Parquet (truncated,
    overwritten). Polars would fail later, deep inside a query, without the file's name."""
    for part in parts:
        path = root / part.file
        try:
            stat = path.stat()
            seen = (stat.st_size, stat.st_mtime_ns)
            if _CHECKED.get(path) == seen:
                continue
            pq.read_metadata(path)
        except FileNotFoundError:
            raise DatasetFileError(f"{path}: table part listed in manifest.json is missing"
                                   ) from None
        except (OSError, pa.ArrowException) as exc:
            raise DatasetFileError(f"{path}: damaged table part (truncated or not Parquet): "
                                   f"{exc}") from None
        _CHECKED[path] = seen


def polars_schema(name: str) -> pl.Schema:
    frame = pl.from_arrow(arrow_schema(name).empty_table())
    assert isinstance(frame, pl.DataFrame)  # a table (not one array) gives a frame
    return pl.Schema(frame.schema)


def scan(root: Path, info: TableInfo, parts: list[Part] | None = None) -> pl.LazyFrame:
    """Lazy scan of ``parts`` (default: all) in the current schema; missing columns are null.

    Filters and column selections on the result are pushed into the Parquet reader, so
    ``scan(...).filter(pl.col("graph_id") == g)`` reads only what it needs.
    """
    parts = info.parts if parts is None else parts
    schema = polars_schema(info.name)
    if not parts:
        return pl.LazyFrame(schema=schema)
    check_parts(root, parts)
    return pl.scan_parquet([root / p.file for p in parts], schema=schema, glob=False,
                           missing_columns="insert", extra_columns="ignore",
                           cast_options=pl.ScanCastOptions(integer_cast="upcast"))


def parts_for_key(info: TableInfo, value: Any) -> list[Part]:
    return [p for p in info.parts if p.may_hold({value})]


def conform(table: pa.Table, name: str, columns: list[str] | None = None) -> pa.Table:
    """``table`` in the current schema's column order and types; absent columns become null.

    ``columns``: only those, in that order. A reader that wants a few columns asks here
    rather than selecting after: every absent column is a buffer of nulls the size of the
    batch, and Arrow's allocator kept pages of them batch after batch (``tgt report``'s peak
    grew with the number of batches read; docs/benchmarks.md, "Scale").
    """
    schema = arrow_schema(name)
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
    cols = [table.column(f.name).cast(f.type) if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def iter_batches(root: Path, part: Part, name: str,
                 columns: list[str] | None = None) -> Iterator[pa.Table]:
    """A part's row groups one at a time, in the current schema (bounded memory)."""
    check_parts(root, [part])
    with pq.ParquetFile(root / part.file) as pf:
        for i in range(pf.num_row_groups):
            group = pf.read_row_group(i, use_threads=False)
            yield conform(group, name, columns)


def key_range(table: pa.Table, key: str) -> tuple[Any, Any]:
    if key not in table.column_names or table.num_rows == 0:
        return None, None
    col = pl.from_arrow(table.column(key).combine_chunks())
    assert isinstance(col, pl.Series)
    col = col.drop_nulls()
    if col.is_empty():
        return None, None
    return col.min(), col.max()


Stage = Callable[[str, Callable[[Path], None]], None]


def write_part(path: Path, tables: Iterator[pa.Table] | list[pa.Table], schema: pa.Schema
               ) -> None:
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for t in tables:
            if t.num_rows:
                writer.write_table(t, row_group_size=ROW_GROUP_ROWS)


def apply_change(root: Path, info: TableInfo, replaced: set[Any], new: pa.Table | None,
                 stage: Stage, drop: Callable[[str], None]) -> None:
    """Drop the rows whose key is in ``replaced``, append ``new`` as a part, then compact.

    ``stage(rel, write)`` stages a new file; ``drop(rel)`` schedules a part's deletion. Only
    parts that really hold a replaced key are rewritten.
    """
    schema = arrow_schema(info.name)
    kept: list[Part] = []
    for part in info.parts:
        if not replaced or not part.may_hold(replaced):
            kept.append(part)
            continue
        check_parts(root, [part])
        keys = pl.read_parquet(root / part.file, columns=[info.key]).get_column(info.key)
        hit = keys.is_in(list(replaced))
        if not hit.any():
            kept.append(part)
            continue
        drop(part.file)
        remaining = int((~hit).sum())
        if not remaining:
            continue
        lazy = scan(root, info, [part]).filter(~pl.col(info.key).is_in(list(replaced)))
        table = conform(lazy.collect().to_arrow(), info.name)
        rel = info.new_file(root)
        stage(rel, partial(write_part, tables=[table], schema=schema))
        kept.append(Part(rel, table.num_rows, *key_range(table, info.key)))
    info.parts = kept
    if new is not None and new.num_rows:
        rel = info.new_file(root)
        stage(rel, partial(write_part, tables=[new], schema=schema))
        info.parts.append(Part(rel, new.num_rows, *key_range(new, info.key)))
    compact(root, info, stage, drop)


def compact(root: Path, info: TableInfo, stage: Stage, drop: Callable[[str], None],
            small_bytes: int = SMALL_PART_BYTES, at: int = COMPACT_AT) -> None:
    """Merge the small committed parts into one (streamed row group by row group) once ``at``
    of them exist; the merged part takes the place of the first one merged."""
    small = [p for p in info.parts
             if (root / p.file).is_file() and (root / p.file).stat().st_size < small_bytes]
    if len(small) < at:
        return
    picked = {id(p) for p in small}
    schema = arrow_schema(info.name)
    rel = info.new_file(root)
    known = all(p.lo is not None for p in small)
    lo = min(p.lo for p in small) if known else None
    hi = max(p.hi for p in small) if known else None
    stage(rel, lambda path: write_part(
        path, (t for p in small for t in iter_batches(root, p, info.name)), schema))
    merged = Part(rel, sum(p.rows for p in small), lo, hi)
    out: list[Part] = []
    for part in info.parts:
        if id(part) in picked:
            drop(part.file)
            if merged not in out:
                out.append(merged)
        else:
            out.append(part)
    info.parts = out
