"""``tgt import``: an official TpuGraphs tree (or the real download) → a tgt dataset.

Arrays are stored exactly as read, so exporting the dataset again gives the same bytes.
Files are read one at a time (or on a process pool), so memory does not grow with the tree. The
path says collection, source, search strategy and split; the file stem becomes the program.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import TPUGRAPHS_SOURCE, TreeEntry, collection_of, parse_tree_path
from tpugraphs_tools.parallel import make_pool
from tpugraphs_tools.publish.staging import MAX_PART_ROWS, check_separate, staged_dir
from tpugraphs_tools.publish.tree.npz import read_official_npz
from tpugraphs_tools.publish.tree.official import conform, num_configs
from tpugraphs_tools.publish.tree.provenance import (
    ProvenanceEntry,
    applies,
    entry_key,
    read_provenance,
)
from tpugraphs_tools.store import ConfigCounts, Dataset, make_graph_id, to_arrow_table

SCRATCH = ".tgt-import"  # worker-written npz files waiting for their commit (removed at the end)
EXPECTED = ("npz/layout/{xla|nlp}/{default|random}/{train|valid|test}/<graph>.npz or "
            "npz/tile/xla/{train|valid|test}/<graph>.npz")


@dataclass
class ImportResult:
    out: Path
    graphs: int = 0
    configs: int = 0
    folders: Counter[str] = field(default_factory=Counter)
    counts: ConfigCounts = field(default_factory=ConfigCounts)  # store/counts.py
    warnings: list[str] = field(default_factory=list)


def scan_tree(root: Path) -> list[TreeEntry]:
    """Every npz under ``root`` with its place in the tree; any stray npz is an error."""
    if not root.is_dir():
        raise DatasetError(f"{root}: not a folder (expected an official TpuGraphs tree)")
    entries = []
    for path in sorted(p for p in root.rglob("*.npz") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        entry = parse_tree_path(rel)
        if entry is None:
            raise DatasetError(f"{path}: not at an official tree position (expected {EXPECTED})")
        entries.append(entry)
    if not entries:
        raise DatasetError(f"{root}: no npz files (expected {EXPECTED})")
    return entries


def arrays_fingerprint(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over key names, dtypes, shapes and bytes: the same file content, the same id."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        arr = np.ascontiguousarray(arrays[key])
        h.update(f"{key}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.data)
    return h.hexdigest()


def default_row(arrays: dict[str, np.ndarray], collection: str) -> int | None:
    """Index of the compiler-default config, if the file has one: every layout feature −1,
    or (tile, tgt's encoding) an all-zero ``config_feat``."""
    spec = collection_of(collection)
    feat = arrays[spec.config_feat_key]
    if feat.shape[0] == 0:
        return None
    mark = spec.default_feature
    hits = np.flatnonzero((feat.reshape(feat.shape[0], -1) == mark).all(axis=1))
    return int(hits[0]) if hits.size else None


def graph_row(entry: TreeEntry, arrays: dict[str, np.ndarray], fingerprint: str,
              backend: str | None, origin: ProvenanceEntry | None = None) -> dict[str, Any]:
    """The graph row; ``origin`` (a tgt export's provenance entry) restores what the npz
    keys cannot carry."""
    spec = collection_of(entry.collection)
    row = {
        "graph_id": make_graph_id(entry.stem, fingerprint),
        "collection": spec.kind.value,
        "program": entry.stem,
        "program_args": json.dumps({"tree_path": entry.rel}, sort_keys=True),
        "source": TPUGRAPHS_SOURCE,
        "source_path": entry.rel,
        "hlo_stage": spec.hlo_stage,
        "fingerprint": fingerprint,
        "backend": backend,
        "device_kind": None,
        "config_space": spec.kind.value,
        "num_nodes": int(arrays["node_feat"].shape[0]),
        "num_edges": int(arrays["edge_index"].shape[0]),
        "num_configurable": (int(arrays["node_config_ids"].shape[0]) if spec.has_node_configs
                             else 0),
        "num_configs": num_configs(arrays, entry.collection),
        "split": entry.split,
    }
    if origin is not None:
        row.update(program=origin["program"] or row["program"],
                   hlo_stage=origin["hlo_stage"] or row["hlo_stage"],
                   backend=origin["backend"] or row["backend"],
                   device_kind=origin["device_kind"] or row["device_kind"],
                   config_space=origin["config_space"] or row["config_space"])
        row["program_args"] = json.dumps({"tree_path": entry.rel,
                                          "tgt_graph_id": origin["graph_id"],
                                          "tgt_program_args": origin["program_args"]},
                                         sort_keys=True)
    row["backend"] = backend or row["backend"] or "tpu"
    return row


def config_rows(entry: TreeEntry, arrays: dict[str, np.ndarray],
                origin: ProvenanceEntry | None = None) -> list[dict[str, Any]]:
    """One ok row per npz config; runtimes as published, relative to the default when known
    (the exporter's default row when ``origin`` records one)."""
    runtime = arrays["config_runtime"].reshape(-1).tolist()
    first_default = (origin["default_row"] if origin is not None and "default_row" in origin
                     else default_row(arrays, entry.collection))
    if first_default is not None and not 0 <= first_default < len(runtime):
        first_default = None
    normalizer = collection_of(entry.collection).normalizer_key
    if normalizer is not None:
        defaults = arrays[normalizer].reshape(-1).tolist()
    else:
        ref = runtime[first_default] if first_default is not None else None
        defaults = [ref] * len(runtime)
    strategy = entry.search or "default"
    rows = []
    for i, (value, default) in enumerate(zip(runtime, defaults, strict=True)):
        value, default = int(value), (None if default is None else int(default))
        rows.append({
            "config_index": i, "strategy": strategy, "seed": None,
            "is_default": i == first_default, "status": "ok",
            "config": json.dumps({"npz_row": i}), "npz_row": i,
            "runtime_min_ns": value, "default_runtime_ns": default,
            "relative_to_default": value / default if default else None,
        })
    return rows


def folder_of(entry: TreeEntry) -> str:
    """``layout/xla/default/train`` or ``tile/xla/train``: the summary's grouping."""
    parts = [entry.collection, entry.source, entry.search, entry.split]
    return "/".join(p for p in parts if p)


@dataclass
class Prepared:
    """One tree file read, checked and written as a dataset npz (by a worker or inline)."""

    rel: str
    folder: str
    row: dict[str, Any]
    provenance_applied: bool
    configs: pa.Table
    extra: list[str]
    nbytes: int
    npz: Path


def prepare(job: tuple[Path, TreeEntry, str | None, Path, ProvenanceEntry | None]) -> Prepared:
    """Read one file, check it is exportable as it is, and write its npz into ``scratch``.

    Runs in a worker process for parallel imports: only the row, the config rows and a path
    travel back, never the arrays.
    """
    tree, entry, backend, scratch, recorded = job
    arrays, extra = read_official_npz(tree / entry.rel, entry.collection)
    conform(arrays, entry.collection, str(tree / entry.rel))  # exportable as it is
    fingerprint = arrays_fingerprint(arrays)
    origin = applies(recorded, fingerprint)
    row = graph_row(entry, arrays, fingerprint, backend, origin)
    rows = [{**r, "graph_id": row["graph_id"]} for r in config_rows(entry, arrays, origin)]
    npz = scratch / f"{uuid.uuid4().hex}.npz"
    with open(npz, "wb") as f:
        # numpy's stub would match the names against allow_pickle: bool
        np.savez_compressed(f, **cast("dict[str, Any]", arrays))
    return Prepared(entry.rel, folder_of(entry), row, origin is not None,
                    to_arrow_table("configs", rows), extra,
                    sum(a.nbytes for a in arrays.values()), npz)


def import_tpugraphs(tree: str | Path, out: str | Path, *, backend: str | None = None,
                     overwrite: bool = False, batch_bytes: int = 256 << 20, jobs: int = 1,
                     executor: str = "local", address: str | None = None,
                     progress: Callable[[int, int], None] = lambda _i, _n: None) -> ImportResult:
    """Read every file of ``tree`` into a new dataset at ``out`` (renamed into place at the end).

    Files are read (on ``jobs`` processes) one at a time and their npz written straight to
    disk; a commit, adding one part to each table, follows every ``batch_bytes`` of arrays,
    so memory does not grow with the tree. Results are the same for any ``jobs`` and with
    ``executor="ray"`` (files split across the Ray cluster at ``address``; the tree and
    ``out`` must then be on a filesystem every node sees). The dataset only appears at
    ``out`` once every file is in. ``backend`` overrides what a tgt export
    recorded (default: recorded, else ``tpu``).
    """
    tree = Path(tree)
    check_separate(tree, out)
    entries = scan_tree(tree)
    provenance = read_provenance(tree)
    result = ImportResult(Path(out))
    seen: dict[str, str] = {}
    with staged_dir(out, overwrite) as stage, make_pool(executor, jobs, address) as pool:
        scratch = stage / SCRATCH
        scratch.mkdir()
        dataset = Dataset.open(stage, create=True)
        tx, pending = dataset.transaction(), 0
        work = ((tree, entry, backend, scratch, provenance.get(entry_key(entry)))
                for entry in entries)
        for done, prep in enumerate(pool.map(prepare, work), start=1):
            if prep.extra:
                result.warnings.append(f"{prep.rel}: keys {', '.join(prep.extra)} are not "
                                       "TpuGraphs keys; left out")
            graph_id = prep.row["graph_id"]
            if graph_id in seen:
                result.warnings.append(f"{prep.rel}: same name and arrays as "
                                       f"{seen[graph_id]}; skipped")
                prep.npz.unlink()
                continue
            seen[graph_id] = prep.rel
            tx.put_graph_file(prep.row, prep.npz)
            if prep.provenance_applied:
                tx.add_device(prep.row["backend"], prep.row["device_kind"] or "")
            tx.put_config_table(graph_id, prep.configs)
            result.graphs += 1
            result.configs += prep.configs.num_rows
            result.counts += ConfigCounts.of_rows(prep.configs.column("status").to_pylist())
            result.folders[prep.folder] += 1
            pending += prep.nbytes
            if pending >= batch_bytes or tx.pending_rows >= MAX_PART_ROWS:
                tx.commit()
                pending = 0
            progress(done, len(entries))
        tx.commit()
        shutil.rmtree(scratch)
    return result
