"""The one read/write API of a tgt dataset directory (layout: docs/format.md).

Reading is lazy: tables are Parquet parts scanned with polars (filters pushed down, see
``tables.py``); graph arrays are read one npz at a time with ``allow_pickle=False``. Writing goes
through a :class:`Transaction` whose commit is atomic (see ``atomic.py``): a killed writer leaves
either the old dataset or the new one, never a mix. Files are staged to disk as they are put,
so a transaction holds row metadata in memory, not arrays.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa

from tpugraphs_tools.errors import DatasetError, DatasetFileError, FormatVersionError
from tpugraphs_tools.store import atomic, tables
from tpugraphs_tools.store.key_batches import key_batches
from tpugraphs_tools.store.manifest import (
    FORMAT_VERSION,
    MANIFEST,
    new_manifest,
    now,
    sha256_file,
)
from tpugraphs_tools.store.schema import to_arrow_table

GRAPHS_DIR = "graphs"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


# what a damaged npz raises, in np.load or when a member is read (zip, inflate, npy header)
NPZ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)


@contextmanager
def read_npz(path: Path) -> Iterator[Any]:
    """``np.load(path)`` (never unpickling) for a block that reads its members: damage found
    opening it or reading a member is one :class:`DatasetFileError` naming the file."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            yield npz
    except NPZ_ERRORS as exc:
        raise DatasetFileError(f"{path}: damaged npz (truncated or overwritten?): "
                               f"{exc}") from None


def make_graph_id(program: str, fingerprint: str) -> str:
    """Stable id: the same program lowered the same way always lands on the same graph row."""
    slug = _SLUG.sub("-", program).strip("-.") or "graph"
    return f"{slug}.{fingerprint[:12]}"


class Dataset:
    """A dataset directory: manifest.json, graphs.parquet, configs.parquet and graphs/."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest

    @classmethod
    def open(cls, root: str | Path, create: bool = False) -> Dataset:
        root = Path(root)
        if (root / atomic.JOURNAL).exists():
            try:
                atomic.recover(root)
            except (OSError, ValueError, KeyError, TypeError) as exc:  # a damaged journal
                raise DatasetFileError(f"{root / atomic.JOURNAL}: cannot finish the "
                                       f"interrupted commit it records: {exc}") from None
        path = root / MANIFEST
        if not path.exists():
            # A first commit killed before its manifest leaves parts nothing names; with the
            # work journals beside them it is that, and collect starts the manifest afresh.
            interrupted = create and (root / atomic.WORK_DIR).is_dir()
            if (root / tables.TABLES_DIR).is_dir() and not interrupted:
                raise DatasetFileError(f"{path}: missing, but {tables.TABLES_DIR}/ is there: a "
                                   "damaged tgt dataset (restore manifest.json from a copy)")
            if not create:
                raise DatasetError(f"{root}: not a tgt dataset (no {MANIFEST}); "
                                   f"create one with `tgt collect --out {root}`")
            root.mkdir(parents=True, exist_ok=True)
            return cls(root, new_manifest())
        try:
            manifest = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DatasetFileError(f"{path}: unreadable manifest: {exc}") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("tables", {}), dict):
            raise DatasetFileError(f"{path}: not a tgt manifest (no tables object)")
        version = manifest.get("format_version")
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise FormatVersionError(f"{path}: format_version {version} is newer than this tgt "
                                     f"supports ({FORMAT_VERSION}); upgrade tpugraphs-tools")
        return cls(root, manifest)

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


class Transaction:
    """Changes to a dataset, applied atomically by :meth:`commit` (or ``with`` exit).

    Files are written to temp names as soon as they are put; rows are kept as Arrow tables
    until the commit writes each changed table's new part.
    """

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self._graph_rows: dict[str, dict[str, Any]] = {}
        self._config_tables: dict[str, pa.Table] = {}
        # table -> (key column, keys replaced, new row tables) for tables beyond graphs/configs
        self._extra_rows: dict[str, tuple[str, set[Any], list[pa.Table]]] = {}
        self._staged: dict[str, Path] = {}  # relative path -> its staged temp file
        self._deletes: list[str] = []
        self._devices: list[dict[str, str]] = []

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

    def update_arrays(self, graph_id: str, arrays: dict[str, np.ndarray]) -> None:
        """Merge ``arrays`` into a graph's npz (e.g. config arrays after measuring)."""
        npz_rel = f"{GRAPHS_DIR}/{graph_id}.npz"
        if npz_rel in self._staged:
            with np.load(self._staged[npz_rel], allow_pickle=False) as npz:
                current = {k: npz[k] for k in npz.files}
        else:
            current = self.dataset.load_arrays(graph_id)
        current.update(arrays)
        self._stage_file(npz_rel, lambda p: write_npz(p, current))

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

    def delete_file(self, rel: str) -> None:
        self._deletes.append(rel)

    def set_graph_field(self, graph_id: str, **fields: Any) -> None:
        row = self._graph_rows.get(graph_id) or self.dataset.graph_row(graph_id)
        self._graph_rows[graph_id] = {**row, **fields}

    def add_device(self, platform: str, device_kind: str) -> None:
        self._devices.append({"platform": platform, "device_kind": device_kind})

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
        ds = self.dataset
        root = ds.root
        (root / GRAPHS_DIR).mkdir(parents=True, exist_ok=True)
        manifest = json.loads(json.dumps(ds.manifest))
        renames: list[tuple[Path, Path]] = []
        drops: list[str] = list(self._deletes)

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
            manifest["format_version"] = FORMAT_VERSION
            manifest["updated_at"] = now()
            body = json.dumps(manifest, indent=2, sort_keys=True).encode()
            stage_manifest = atomic.temp_path(root / MANIFEST)
            stage_manifest.write_bytes(body)
            atomic.fsync_path(stage_manifest)
            renames.append((stage_manifest, root / MANIFEST))
        except BaseException:
            self.discard()
            for tmp, _ in renames:
                tmp.unlink(missing_ok=True)
            raise
        try:
            atomic.commit(root, renames, [root / rel for rel in drops])
        finally:
            atomic.LIVE.difference_update(self._staged.values())
        ds.manifest = manifest
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
        self._deletes.clear()
        self._devices.clear()


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write one graph's arrays as a compressed npz (the one writer: the store and exports)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        # numpy's stub would match the names against allow_pickle: bool
        np.savez_compressed(f, **cast("dict[str, Any]", arrays))
