"""The one read/write API of a tgt dataset directory (layout: docs/format.md).

Reading is lazy: tables are small and read whole; graph arrays are read one npz at a time with
``allow_pickle=False``. Writing goes through a :class:`Transaction` whose commit is atomic (see
``atomic.py``): a killed writer leaves either the old dataset or the new one, never a mix.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from tpugraphs_tools.errors import DatasetError, FormatVersionError
from tpugraphs_tools.store import atomic
from tpugraphs_tools.store.manifest import (
    FORMAT_VERSION,
    MANIFEST,
    new_manifest,
    now,
    sha256_file,
)
from tpugraphs_tools.store.schema import arrow_schema, to_arrow_table

GRAPHS_DIR = "graphs"
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

    @classmethod
    def open(cls, root: str | Path, create: bool = False) -> Dataset:
        root = Path(root)
        if (root / atomic.JOURNAL).exists():
            atomic.recover(root)
        path = root / MANIFEST
        if not path.exists():
            if not create:
                raise DatasetError(f"{root}: not a tgt dataset (no {MANIFEST}); "
                                   f"create one with `tgt collect --out {root}`")
            root.mkdir(parents=True, exist_ok=True)
            return cls(root, new_manifest())
        try:
            manifest = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{path}: unreadable manifest: {exc}") from None
        version = manifest.get("format_version")
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise FormatVersionError(f"{path}: format_version {version} is newer than this tgt "
                                     f"supports ({FORMAT_VERSION}); upgrade tpugraphs-tools")
        return cls(root, manifest)

    # -- tables ---------------------------------------------------------------------------
    def table(self, name: str) -> pl.DataFrame:
        """A whole table (tables are small: one row per graph or config)."""
        info = self.manifest["tables"].get(name, {"file": f"{name}.parquet"})
        path = self.root / info["file"]
        if not path.exists():
            return pl.from_arrow(arrow_schema(name).empty_table())
        try:
            return pl.from_arrow(pq.read_table(path))
        except Exception as exc:
            raise DatasetError(f"{path}: unreadable parquet: {exc}") from None

    def graphs(self) -> pl.DataFrame:
        return self.table("graphs")

    def configs(self) -> pl.DataFrame:
        return self.table("configs")

    def graph_row(self, graph_id: str) -> dict[str, Any]:
        rows = self.graphs().filter(pl.col("graph_id") == graph_id).to_dicts()
        if not rows:
            raise DatasetError(f"{self.root}: no graph {graph_id!r} in graphs.parquet")
        return rows[0]

    # -- arrays ---------------------------------------------------------------------------
    def npz_path(self, graph_id: str) -> Path:
        return self.root / GRAPHS_DIR / f"{graph_id}.npz"

    def load_arrays(self, graph_id: str, keys: tuple[str, ...] | None = None
                    ) -> dict[str, np.ndarray]:
        """One graph's arrays (all keys, or just ``keys``); never unpickles."""
        path = self.npz_path(graph_id)
        try:
            with np.load(path, allow_pickle=False) as npz:
                return {k: npz[k] for k in (keys or npz.files)}
        except Exception as exc:  # a damaged npz fails in zipfile, zlib, tokenize, ...
            raise DatasetError(f"{path}: cannot read arrays: {exc}") from None

    def iter_graphs(self) -> Iterator[tuple[dict[str, Any], dict[str, np.ndarray]]]:
        """Rows with their arrays, one graph in memory at a time."""
        for row in self.graphs().to_dicts():
            yield row, self.load_arrays(row["graph_id"])

    def hlo_text(self, graph_id: str) -> str:
        """The stored HLO of a graph as text (protos are printed through jaxlib)."""
        row = self.graph_row(graph_id)
        if not row.get("hlo_file"):
            raise DatasetError(f"{self.root}: graph {graph_id!r} has no stored HLO")
        path = self.root / row["hlo_file"]
        if path.name.endswith(".pb"):
            from tpugraphs_tools.hlo.proto import proto_to_text

            return proto_to_text(path.read_bytes(), source=str(path))
        return path.read_text()

    def transaction(self) -> Transaction:
        return Transaction(self)


class Transaction:
    """Buffered changes to a dataset, applied atomically by :meth:`commit` (or ``with`` exit)."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self._graph_rows: dict[str, dict[str, Any]] = {}
        self._config_rows: dict[str, list[dict[str, Any]]] = {}
        # table -> (key column, keys replaced, new rows) for tables beyond graphs/configs
        self._extra_rows: dict[str, tuple[str, set[Any], list[dict[str, Any]]]] = {}
        self._files: dict[str, bytes] = {}
        self._deletes: list[str] = []
        self._devices: list[dict[str, str]] = []

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()

    def put_graph(self, row: dict[str, Any], arrays: dict[str, np.ndarray],
                  hlo: bytes | None = None, hlo_suffix: str = ".hlo.pb") -> None:
        """Add or replace a graph (row + npz + optional raw HLO beside it)."""
        graph_id = row["graph_id"]
        npz_rel = f"{GRAPHS_DIR}/{graph_id}.npz"
        row = {"created_at": now(), **row, "npz_file": npz_rel}
        if hlo is not None:
            row["hlo_file"] = f"{GRAPHS_DIR}/{graph_id}{hlo_suffix}"
            self._files[row["hlo_file"]] = hlo
        self._graph_rows[graph_id] = row
        self._files[npz_rel] = _npz_bytes(arrays)

    def update_arrays(self, graph_id: str, arrays: dict[str, np.ndarray]) -> None:
        """Merge ``arrays`` into a graph's npz (e.g. config arrays after measuring)."""
        npz_rel = f"{GRAPHS_DIR}/{graph_id}.npz"
        if npz_rel in self._files:
            with np.load(io.BytesIO(self._files[npz_rel]), allow_pickle=False) as npz:
                current = {k: npz[k] for k in npz.files}
        else:
            current = self.dataset.load_arrays(graph_id)
        current.update(arrays)
        self._files[npz_rel] = _npz_bytes(current)

    def put_configs(self, graph_id: str, rows: list[dict[str, Any]]) -> None:
        """Replace every config row of ``graph_id``."""
        self._config_rows[graph_id] = [{**r, "graph_id": graph_id} for r in rows]

    def put_rows(self, table: str, key: str, keys: list[Any], rows: list[dict[str, Any]]) -> None:
        """Replace the rows of ``table`` whose ``key`` column is in ``keys`` with ``rows``.

        ``table`` needs ``schemas/<table>.schema.json``; it is registered in the manifest on
        first use (e.g. ``partitions``).
        """
        _, old_keys, old_rows = self._extra_rows.get(table, (key, set(), []))
        self._extra_rows[table] = (key, old_keys | set(keys), old_rows + rows)

    def put_file(self, rel: str, data: bytes) -> None:
        """Add or replace any file under the dataset root (listed + checksummed)."""
        self._files[rel] = data

    def delete_file(self, rel: str) -> None:
        self._deletes.append(rel)

    def set_graph_field(self, graph_id: str, **fields: Any) -> None:
        row = self._graph_rows.get(graph_id) or self.dataset.graph_row(graph_id)
        self._graph_rows[graph_id] = {**row, **fields}

    def add_device(self, platform: str, device_kind: str) -> None:
        self._devices.append({"platform": platform, "device_kind": device_kind})

    def commit(self) -> None:
        ds = self.dataset
        root = ds.root
        (root / GRAPHS_DIR).mkdir(parents=True, exist_ok=True)
        manifest = json.loads(json.dumps(ds.manifest))
        renames: list[tuple[Path, Path]] = []

        def stage(rel: str, write: Any) -> None:
            final = root / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = atomic.temp_path(final)
            write(tmp)
            atomic.fsync_path(tmp)  # durable before the commit journal can point at it
            manifest["files"][rel] = {"sha256": sha256_file(tmp), "bytes": tmp.stat().st_size}
            renames.append((tmp, final))

        try:
            for rel, data in self._files.items():
                stage(rel, lambda p, d=data: p.write_bytes(d))
            changes: dict[str, tuple[str, set[Any], list[dict[str, Any]]]] = {
                "graphs": ("graph_id", set(self._graph_rows), list(self._graph_rows.values())),
                "configs": ("graph_id", set(self._config_rows),
                            [r for rows in self._config_rows.values() for r in rows]),
                **self._extra_rows,
            }
            for name, (key, replaced, new_rows) in changes.items():
                if name not in ("graphs", "configs") and not new_rows and not replaced:
                    continue
                info = manifest["tables"].setdefault(name, {"file": f"{name}.parquet",
                                                            "rows": 0})
                kept = ds.table(name)
                if replaced and kept.height:
                    kept = kept.filter(~pl.col(key).is_in(list(replaced)))
                rows = kept.to_dicts() + new_rows
                table = to_arrow_table(name, rows)
                stage(info["file"], lambda p, t=table: pq.write_table(t, p, compression="zstd"))
                info["rows"] = len(rows)
            for rel in self._deletes:
                manifest["files"].pop(rel, None)
            for dev in self._devices:
                if dev not in manifest["devices"]:
                    manifest["devices"].append(dev)
            manifest["updated_at"] = now()
            body = json.dumps(manifest, indent=2, sort_keys=True).encode()
            stage_manifest = atomic.temp_path(root / MANIFEST)
            stage_manifest.write_bytes(body)
            atomic.fsync_path(stage_manifest)
            renames.append((stage_manifest, root / MANIFEST))
        except BaseException:
            for tmp, _ in renames:
                tmp.unlink(missing_ok=True)
            raise
        atomic.commit(root, renames, [root / rel for rel in self._deletes])
        ds.manifest = manifest
        self._graph_rows.clear()
        self._config_rows.clear()
        self._files.clear()
        self._extra_rows.clear()
        self._deletes.clear()


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()
