"""Writing a tgt dataset: a :class:`Transaction` stages changes and commits them atomically.

Kept apart from the read API (``dataset.py``) because this is the crash-safety half: files are
staged to temp names as they are put (a transaction holds row metadata in memory, not arrays),
each changed table gets new Parquet parts (``tables.py``), and the commit swaps files and the
manifest in through the journal of ``atomic.py``, so a killed writer leaves either the old
dataset or the new one, never a mix. The commit holds the dataset's write lock (``lock.py``)
and starts from the manifest on disk, so another writer's commit is built on, never undone.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from tpugraphs_tools.store import atomic, tables
from tpugraphs_tools.store.graph_npz import GRAPHS_DIR, write_npz
from tpugraphs_tools.store.lock import dataset_lock
from tpugraphs_tools.store.manifest import MANIFEST, now, sha256_file, stage_manifest
from tpugraphs_tools.store.schema import to_arrow_table


class DatasetView(Protocol):
    """What a transaction reads of the dataset it writes (``dataset.Dataset`` is one): declared
    here so that the read API may hand out transactions without the two importing each other."""

    root: Path
    manifest: dict[str, Any]

    def refresh(self) -> None:
        """Re-read the manifest if another writer committed since it was read."""
        ...

    def committed(self, manifest: dict[str, Any]) -> None:
        """Take ``manifest`` as the one just written."""
        ...

    def table_info(self, name: str) -> tables.TableInfo:
        """The manifest's record of table ``name`` (its parts and key)."""
        ...

    def graph_row(self, graph_id: str) -> dict[str, Any]:
        """The committed graphs.parquet row of ``graph_id``."""
        ...


class Transaction:
    """Changes to a dataset, applied atomically by :meth:`commit` (or ``with`` exit).

    Files are written to temp names as soon as they are put; rows are kept as Arrow tables
    until the commit writes each changed table's new part.
    """

    def __init__(self, dataset: DatasetView) -> None:
        self.dataset = dataset
        self._graph_rows: dict[str, dict[str, Any]] = {}
        self._config_tables: dict[str, pa.Table] = {}
        # table -> (key column, keys replaced, new row tables) for tables beyond graphs/configs
        self._extra_rows: dict[str, tuple[str, set[Any], list[pa.Table]]] = {}
        self._staged: dict[str, Path] = {}  # relative path -> its staged temp file
        self._devices: list[dict[str, str]] = []
        self._settled: list[Path] = []  # work files the commit removes (settle_with_commit)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def _stage_file(self, rel: str, write: Any) -> None:
        final = self.dataset.root / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        old = self._staged.pop(rel, None)
        tmp = atomic.temp_path(final)
        atomic.LIVE.add(tmp)
        try:
            write(tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            atomic.LIVE.discard(tmp)
            raise
        self._staged[rel] = tmp
        if old is not None:
            old.unlink(missing_ok=True)
            atomic.LIVE.discard(old)

    def put_graph(self, row: Mapping[str, Any], arrays: dict[str, np.ndarray],
                  hlo: bytes | None = None, hlo_suffix: str = ".hlo.pb") -> None:
        """Add or replace a graph (row + npz + optional raw HLO beside it)."""
        graph_id = row["graph_id"]
        npz_rel = f"{GRAPHS_DIR}/{graph_id}.npz"
        stored = {"created_at": now(), **row, "npz_file": npz_rel}
        if hlo is not None:
            stored["hlo_file"] = f"{GRAPHS_DIR}/{graph_id}{hlo_suffix}"
            self.put_file(stored["hlo_file"], hlo)
        to_arrow_table("graphs", [stored])  # unknown columns fail here, not at commit
        self._graph_rows[graph_id] = stored
        self._stage_file(npz_rel, lambda p: write_npz(p, arrays))

    def put_graph_file(self, row: dict[str, Any], npz: Path) -> None:
        """Like :meth:`put_graph` for an npz already written (e.g. by a worker process):
        the file is moved into the dataset's staging, not copied."""
        graph_id = row["graph_id"]
        npz_rel = f"{GRAPHS_DIR}/{graph_id}.npz"
        row = {"created_at": now(), **row, "npz_file": npz_rel}
        to_arrow_table("graphs", [row])
        self._graph_rows[graph_id] = row
        self._stage_file(npz_rel, lambda p: os.replace(npz, p))

    def put_configs(self, graph_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Replace every config row of ``graph_id``."""
        self._config_tables[graph_id] = to_arrow_table(
            "configs", [{**r, "graph_id": graph_id} for r in rows])

    def put_config_table(self, graph_id: str, table: pa.Table) -> None:
        """:meth:`put_configs` for rows already in the configs schema (``schema.to_arrow_table``
        with ``graph_id`` filled in)."""
        self._config_tables[graph_id] = table

    def put_rows(self, table: str, key: str, keys: list[Any], rows: list[dict[str, Any]]) -> None:
        """Replace the rows of ``table`` whose ``key`` column is in ``keys`` with ``rows``.

        ``table`` needs ``schemas/<table>.schema.json``; it is registered in the manifest on
        first use (e.g. ``partitions``).
        """
        _, old_keys, old_rows = self._extra_rows.get(table, (key, set(), []))
        self._extra_rows[table] = (key, old_keys | set(keys),
                                   [*old_rows, to_arrow_table(table, rows)])

    def put_file(self, rel: str, data: bytes) -> None:
        """Add or replace any file under the dataset root (listed + checksummed)."""
        self._stage_file(rel, lambda p: p.write_bytes(data))

    def set_graph_field(self, graph_id: str, **fields: Any) -> None:
        row = self._graph_rows.get(graph_id) or self.dataset.graph_row(graph_id)
        self._graph_rows[graph_id] = {**row, **fields}

    def add_device(self, platform: str, device_kind: str) -> None:
        self._devices.append({"platform": platform, "device_kind": device_kind})

    def settle_with_commit(self, path: Path) -> None:
        """Remove ``path``, a file outside the manifest that the commit makes obsolete (a
        graph's work journal), in the commit's own journaled step: a run killed at any moment
        leaves either the graph uncommitted with its journal, or committed without it."""
        self._settled.append(path)

    @property
    def pending_rows(self) -> int:
        """Config rows waiting for the commit (callers commit in batches by this)."""
        return sum(t.num_rows for t in self._config_tables.values())

    def _table_changes(self) -> dict[str, tuple[str, set[Any], pa.Table | None]]:
        def concat(name: str, parts: list[pa.Table]) -> pa.Table | None:
            return pa.concat_tables(parts) if parts else None

        graphs = [to_arrow_table("graphs", [r]) for r in self._graph_rows.values()]
        out = {"graphs": ("graph_id", set(self._graph_rows), concat("graphs", graphs)),
               "configs": ("graph_id", set(self._config_tables),
                           concat("configs", list(self._config_tables.values())))}
        for name, (key, keys, rows) in self._extra_rows.items():
            out[name] = (key, keys, concat(name, rows))
        return out

    def commit(self) -> None:
        """Swap the staged changes in atomically, under the dataset's write lock (raises
        :class:`~tpugraphs_tools.errors.DatasetLockedError` while another live run holds it)."""
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(dataset_lock(self.dataset.root))
                self.dataset.refresh()
            except BaseException:
                self.discard()
                raise
            self._commit()

    def _commit(self) -> None:
        ds = self.dataset
        root = ds.root
        (root / GRAPHS_DIR).mkdir(parents=True, exist_ok=True)
        manifest = json.loads(json.dumps(ds.manifest))
        renames: list[tuple[Path, Path]] = []
        drops: list[str] = []  # table parts rewritten or compacted away

        def record(rel: str, tmp: Path) -> None:
            atomic.fsync_path(tmp)  # durable before the commit journal can point at it
            manifest["files"][rel] = {"sha256": sha256_file(tmp), "bytes": tmp.stat().st_size}
            renames.append((tmp, root / rel))

        def stage(rel: str, write: Any) -> None:
            self._stage_file(rel, write)
            record(rel, self._staged[rel])

        try:
            for rel, tmp in list(self._staged.items()):
                record(rel, tmp)
            for name, (key, replaced, new) in self._table_changes().items():
                if name not in ("graphs", "configs") and new is None and not replaced:
                    continue
                info = ds.table_info(name)
                if name in manifest["tables"] and "parts" not in manifest["tables"][name]:
                    info.key = key  # a format-1 table: its one file becomes the first part
                elif name not in manifest["tables"]:
                    info.key = key
                tables.apply_change(root, info, replaced, new, stage, drops.append)
                manifest["tables"][name] = info.to_json()
            for rel in drops:
                manifest["files"].pop(rel, None)
            for dev in self._devices:
                if dev not in manifest["devices"]:
                    manifest["devices"].append(dev)
            renames.append((stage_manifest(root, manifest), root / MANIFEST))
        except BaseException:
            self.discard()
            for tmp, _ in renames:
                tmp.unlink(missing_ok=True)
            raise
        try:
            atomic.commit(root, renames, [root / rel for rel in drops] + self._settled)
        finally:
            atomic.LIVE.difference_update(self._staged.values())
        ds.committed(manifest)
        self._clear()

    def discard(self) -> None:
        """Forget the changes and remove their staged files."""
        for tmp in self._staged.values():
            tmp.unlink(missing_ok=True)
            atomic.LIVE.discard(tmp)
        self._clear()

    def _clear(self) -> None:
        self._graph_rows.clear()
        self._config_tables.clear()
        self._staged.clear()
        self._extra_rows.clear()
        self._devices.clear()
        self._settled.clear()
