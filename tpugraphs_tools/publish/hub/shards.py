"""Parquet shards named the Hugging Face way: ``{name}-{split}-{i:05d}-of-{n:05d}.parquet``.

The shard count is known only at the end, so shards are written under provisional names and
renamed on :meth:`ShardWriter.close`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.store import sha256_file

DEFAULT_SHARD_BYTES = 500 << 20
ROW_GROUP_BYTES = 64 << 20


@dataclass(frozen=True)
class Shard:
    """One written file: path relative to the publish root, rows, Arrow bytes, file bytes."""

    rel: str
    table: str
    split: str
    rows: int
    num_bytes: int
    size: int
    sha256: str


def shard_name(name: str, split: str, index: int, count: int) -> str:
    return f"{name}-{split}-{index:05d}-of-{count:05d}.parquet"


class ShardWriter:
    """Write tables of one (table, split) into shards of at most ``max_bytes`` Arrow bytes."""

    def __init__(self, root: Path, table: str, name: str, split: str, schema: pa.Schema,
                 max_bytes: int = DEFAULT_SHARD_BYTES) -> None:
        self.root, self.table, self.name, self.split = root, table, name, split
        self.schema, self.max_bytes = schema, max_bytes
        (root / table).mkdir(parents=True, exist_ok=True)
        self._done: list[tuple[Path, int, int]] = []  # (provisional path, rows, bytes)
        self._writer: pq.ParquetWriter | None = None
        self._path: Path | None = None
        self._rows = self._bytes = 0
        self._buffer: list[pa.Table] = []
        self._buffered = 0

    def write(self, table: pa.Table) -> None:
        if self._writer is not None and self._bytes + self._buffered + table.nbytes \
                > self.max_bytes:
            self._finish_shard()
        if self._writer is None:
            self._path = self.root / self.table / f".{self.name}-{self.split}-" \
                f"{len(self._done):05d}.partial"
            self._writer = pq.ParquetWriter(self._path, self.schema, compression="zstd")
        self._buffer.append(table)
        self._buffered += table.nbytes
        if self._buffered >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._buffer and self._writer is not None:
            merged = pa.concat_tables(self._buffer)
            self._writer.write_table(merged)
            self._rows += merged.num_rows
            self._bytes += self._buffered
        self._buffer, self._buffered = [], 0

    def _finish_shard(self) -> None:
        self._flush()
        assert self._writer is not None and self._path is not None
        self._writer.close()
        self._done.append((self._path, self._rows, self._bytes))
        self._writer, self._path, self._rows, self._bytes = None, None, 0, 0

    def close(self) -> list[Shard]:
        """Finish the last shard and give every shard its final name."""
        if self._writer is not None:
            self._finish_shard()
        shards = []
        for i, (path, rows, nbytes) in enumerate(self._done):
            rel = f"{self.table}/{shard_name(self.name, self.split, i, len(self._done))}"
            final = self.root / rel
            os.replace(path, final)
            shards.append(Shard(rel, self.table, self.split, rows, nbytes,
                                final.stat().st_size, sha256_file(final)))
        return shards
