"""The one read API of a tgt dataset directory (layout: docs/format.md).

Reading is lazy: tables are Parquet parts scanned with polars (filters pushed down, see
``tables.py``); graph arrays are read one npz at a time with ``allow_pickle=False``
(``graph_npz.py``). Writing goes through :meth:`Dataset.transaction`, whose commit is atomic
(``transaction.py``) and made under the dataset's write lock (``lock.py``); the manifest is
read and checked in ``manifest.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from tpugraphs_tools.errors import DatasetError, DatasetFileError, DatasetLockedError
from tpugraphs_tools.store import atomic, tables
from tpugraphs_tools.store.graph_npz import GRAPHS_DIR, missing_npz, read_npz
from tpugraphs_tools.store.key_batches import key_batches
from tpugraphs_tools.store.lock import dataset_lock
from tpugraphs_tools.store.manifest import MANIFEST, load_manifest
from tpugraphs_tools.store.transaction import Transaction

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def make_graph_id(program: str, fingerprint: str) -> str:
    """Stable id: the same program lowered the same way always lands on the same graph row."""
    slug = _SLUG.sub("-", program).strip("-.") or "graph"
    return f"{slug}.{fingerprint[:12]}"


class Dataset:
    """A dataset directory: manifest.json, graphs.parquet, configs.parquet and graphs/."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest
        self._manifest_seen = self._manifest_stamp()

    @classmethod
    def open(cls, root: str | Path, create: bool = False) -> Dataset:
        root = Path(root)
        if (root / atomic.JOURNAL).exists():
            try:
                with dataset_lock(root):
                    atomic.recover(root)
            except DatasetLockedError:
                pass  # a live writer is mid-commit: it finishes its own (its temps stay)
            except (OSError, ValueError, KeyError, TypeError) as exc:  # a damaged journal
                raise DatasetFileError(f"{root / atomic.JOURNAL}: cannot finish the "
                                       f"interrupted commit it records: {exc}") from None
        return cls(root, load_manifest(root, create))

    def _manifest_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = (self.root / MANIFEST).stat()
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def refresh(self) -> None:
        """Re-read manifest.json if another :class:`Dataset` (or process) committed since this
        one read it: a commit then builds on the latest parts, never over them."""
        stamp = self._manifest_stamp()
        if stamp is not None and stamp != self._manifest_seen:
            self.manifest = load_manifest(self.root)
            self._manifest_seen = stamp

    def committed(self, manifest: dict[str, Any]) -> None:
        """Record ``manifest`` as the one this object's commit just wrote."""
        self.manifest = manifest
        self._manifest_seen = self._manifest_stamp()

    # -- tables ---------------------------------------------------------------------------
    def table_info(self, name: str) -> tables.TableInfo:
        return tables.table_info(self.manifest, name, self.root)

    def check_parts(self) -> None:
        """Every table part listed in the manifest is there and reads as Parquet (its footer
        only): a command about to add to the dataset refuses a damaged one, naming the part,
        before it measures anything that a later merge of the parts would then trip over."""
        for name in self.manifest.get("tables", {}):
            info = self.table_info(name)
            tables.check_parts(self.root, info.parts)

    def scan(self, name: str) -> pl.LazyFrame:
        """A lazy scan of a table (filters and column selections are pushed down)."""
        return tables.scan(self.root, self.table_info(name))

    def table(self, name: str) -> pl.DataFrame:
        """A whole table: the simple API for small data (use :meth:`scan` for big tables)."""
        return self._collect(self.scan(name), name)

    def _collect(self, lazy: pl.LazyFrame, name: str) -> pl.DataFrame:
        try:
            return lazy.collect()
        except Exception as exc:  # missing or damaged part: name the table's parts
            files = ", ".join(p.file for p in self.table_info(name).parts)
            raise DatasetFileError(f"{self.root}: unreadable {name} table ({files}): "
                                   f"{exc}") from None

    def graphs(self) -> pl.DataFrame:
        return self.table("graphs")

    def configs(self) -> pl.DataFrame:
        return self.table("configs")

    def configs_of(self, graph_id: str) -> pl.DataFrame:
        """One graph's config rows, reading only the parts whose key range holds it."""
        info = self.table_info("configs")
        parts = tables.parts_for_key(info, graph_id)
        lazy = tables.scan(self.root, info, parts).filter(pl.col(info.key) == graph_id)
        return self._collect(lazy, "configs")

    def iter_config_groups(self) -> Iterator[tuple[str, pl.DataFrame]]:
        """(graph_id, its config rows in config_index order), one table part in memory at a
        time: a graph's config rows always sit in one part (``put_configs`` writes them
        together, and rewrites and merges move whole parts)."""
        info = self.table_info("configs")
        for part in info.parts:
            frame = self._collect(tables.scan(self.root, info, [part]), "configs")
            if frame.is_empty():
                continue
            for (gid,), group in frame.sort(info.key, "config_index").group_by(
                    info.key, maintain_order=True):
                yield str(gid), group

    def key_batches(self, name: str, columns: list[str]) -> Iterator[pl.DataFrame]:
        """``columns`` of a big table in bounded batches, each holding every row of the keys
        (graphs) in it: per-graph figures without the table in memory (key_batches.py)."""
        info = self.table_info(name)
        try:
            yield from key_batches(self.root, info, columns)
        except (OSError, pa.ArrowException) as exc:
            raise DatasetFileError(f"{self.root}: unreadable {name} table: {exc}") from None

    def count_rows(self, name: str) -> int:
        return self.table_info(name).rows

    def graph_row(self, graph_id: str) -> dict[str, Any]:
        info = self.table_info("graphs")
        lazy = tables.scan(self.root, info, tables.parts_for_key(info, graph_id))
        rows = self._collect(lazy.filter(pl.col("graph_id") == graph_id), "graphs").to_dicts()
        if not rows:
            raise DatasetError(f"{self.root}: no graph {graph_id!r} in graphs.parquet")
        return rows[0]

    # -- arrays ---------------------------------------------------------------------------
    def npz_path(self, graph_id: str) -> Path:
        return self.root / GRAPHS_DIR / f"{graph_id}.npz"

    def check_graph_file(self, graph_id: str) -> None:
        """Raise :class:`DatasetFileError` unless the graph's npz is there with the byte count
        manifest.json records: a cache keyed to the manifest is only valid while it is."""
        path = self.npz_path(graph_id)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise DatasetFileError(missing_npz(path)) from None
        listed = self.manifest.get("files", {}).get(f"{GRAPHS_DIR}/{graph_id}.npz", {})
        if isinstance(listed, dict) and listed.get("bytes") not in (None, size):
            raise DatasetFileError(f"{path}: {size} bytes, manifest.json says "
                                   f"{listed['bytes']} (changed outside tgt?); `tgt validate` "
                                   "checks every file")

    def load_arrays(self, graph_id: str, keys: tuple[str, ...] | None = None
                    ) -> dict[str, np.ndarray]:
        """One graph's arrays (all keys, or just ``keys``); never unpickles."""
        with read_npz(self.npz_path(graph_id)) as npz:
            return {k: npz[k] for k in (keys or npz.files)}

    def iter_graphs(self) -> Iterator[tuple[dict[str, Any], dict[str, np.ndarray]]]:
        """Rows with their arrays, one graph in memory at a time."""
        for row in self.graphs().to_dicts():
            yield row, self.load_arrays(row["graph_id"])

    def to_networkx(self, graph_id: str) -> Any:
        """One graph as a ``networkx.DiGraph`` (attributes: :func:`graph_view.graph_to_networkx`;
        networkx is imported only here)."""
        from tpugraphs_tools.store.graph_view import GRAPH_KEYS, graph_to_networkx

        path = self.npz_path(graph_id)
        row = self.graph_row(graph_id)
        with read_npz(path) as npz:
            arrays = {k: npz[k] for k in GRAPH_KEYS if k in npz.files}
        return graph_to_networkx(row, arrays)

    def hlo_text(self, graph_id: str) -> str:
        """The stored HLO of a graph as text (protos are printed through jaxlib)."""
        row = self.graph_row(graph_id)
        if not row.get("hlo_file"):
            raise DatasetError(f"{self.root}: graph {graph_id!r} has no stored HLO")
        path = self.root / row["hlo_file"]
        if path.name.endswith(".pb"):
            from tpugraphs_tools.hlo import proto_to_text

            return proto_to_text(path.read_bytes(), source=str(path))
        return path.read_text()

    def transaction(self) -> Transaction:
        return Transaction(self)
