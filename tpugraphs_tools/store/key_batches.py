"""A big table read in bounded batches that never split a key (a graph's config rows).

Per-graph statistics (label CIs, duplicate npz rows, a graph's CPUs) need all of a graph's
rows at once, but a table part can hold millions of rows (16 small parts merge into one).
Reading a part in row batches and holding back the rows of keys that appear further on gives
both: every batch holds whole keys, and memory is one batch plus the keys still open, not the
part. A first pass over the key column alone finds each key's last row.

Rows of one key are usually contiguous (``put_configs`` writes them together; rewrites and
merges keep the order), so the held-back rows are at most one key's; keys scattered over a
part still come out whole, only later.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.store.tables import ROW_GROUP_ROWS, TableInfo, check_parts, conform

ROW = "__row"  # the row within its part, added to every batch


class WholeKeys:
    """Turns row batches (in row order, with ``__row``) into batches of whole keys.

    ``last`` maps each key value to the last row (within the part) that holds it; ``null_last``
    is the last row whose key is null (-1: none), those rows counting as one key.
    """

    def __init__(self, key: str, last: dict[Any, int], null_last: int = -1) -> None:
        self.key, self.last_of, self.null_last = key, last, null_last
        self.last: pl.DataFrame | None = None  # built on the first batch, in its key type
        self.held: pl.DataFrame | None = None

    def push(self, batch: pl.DataFrame) -> pl.DataFrame | None:
        """The rows, held ones first, of every key whose last row is in or before ``batch``."""
        frame = batch if self.held is None else pl.concat([self.held, batch])
        self.held = None
        if not frame.height:
            return None
        end = int(batch.get_column(ROW).max()) if batch.height else -1  # type: ignore[arg-type]
        if self.key not in frame.columns:
            return frame
        if self.last is None:
            self.last = pl.DataFrame({
                self.key: pl.Series(list(self.last_of), dtype=frame.schema[self.key]),
                "__last": pl.Series(list(self.last_of.values()), dtype=pl.Int64)})
        last = (frame.select(self.key).join(self.last, on=self.key, how="left",
                                            maintain_order="left")
                .get_column("__last").fill_null(self.null_last))
        done = last <= end
        if bool(done.all()):
            return frame
        self.held = frame.filter(~done)
        ready = frame.filter(done)
        return ready if ready.height else None

    def rest(self) -> pl.DataFrame | None:
        """Rows still held at the end of the part (none when ``last`` was right)."""
        held, self.held = self.held, None
        return held if held is not None and held.height else None


def last_rows(keys: Iterable[pa.Array | pa.ChunkedArray], key: str) -> tuple[dict[Any, int], int]:
    """(key value → last row, last row of a null key) over one column's batches in row order."""
    last: dict[Any, int] = {}
    null_last, offset = -1, 0
    for values in keys:
        series = pl.Series(key, values)
        frame = series.to_frame().with_row_index(ROW, offset)
        offset += len(series)
        if series.null_count():
            null_last = int(frame.filter(pl.col(key).is_null()).get_column(ROW).max())  # type: ignore[arg-type]
        for value, row in (frame.drop_nulls(key).group_by(key, maintain_order=True)
                           .agg(pl.col(ROW).max()).iter_rows()):
            last[value] = row
    return last, null_last


def key_batches(root: Path, info: TableInfo, columns: list[str],
                batch_rows: int = ROW_GROUP_ROWS) -> Iterator[pl.DataFrame]:
    """``columns`` of table ``info`` (in the current schema), part by part, in batches that
    each hold every row of the keys in them; each batch has ``__row``, the row in its part."""
    for part in info.parts:
        check_parts(root, [part])
        with pq.ParquetFile(root / part.file) as pf:
            present = set(pf.schema_arrow.names)
            stored = [c for c in columns if c in present]
            if info.key not in present:
                whole = WholeKeys(info.key, {})
            else:
                whole = WholeKeys(info.key, *last_rows(
                    (b.column(0) for b in pf.iter_batches(batch_size=batch_rows,
                                                          columns=[info.key],
                                                          use_threads=False)), info.key))
            offset = 0
            for batch in pf.iter_batches(batch_size=batch_rows, columns=stored,
                                         use_threads=False):
                table = conform(pa.Table.from_batches([batch]), info.name, columns)
                frame = pl.from_arrow(table)
                assert isinstance(frame, pl.DataFrame)
                frame = frame.with_row_index(ROW, offset)
                offset += batch.num_rows
                ready = whole.push(frame)
                if ready is not None:
                    yield ready
            rest = whole.rest()
            if rest is not None:
                yield rest
