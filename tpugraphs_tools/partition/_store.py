"""Partitions inside a dataset: the ``partitions`` table plus one small npz per graph.

Rows are keyed by ``partition_id = <partition>/<graph_id>``, so re-running the same command
replaces the same rows and files; the npz bytes are deterministic (fixed zip timestamps), so an
unchanged partition also keeps its checksum.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.partition._methods import (
    METHODS,
    Partition,
    partition_graph,
    reduction,
    segments_for,
)
from tpugraphs_tools.store import Dataset, dataset_lock, now, read_npz

TABLE = "partitions"
PARTITIONS_DIR = "partitions"
NODE_SEGMENT = "node_segment"


def partition_name(method: str, segments: int | None = None,
                   max_segment_nodes: int | None = None) -> str:
    """``metis-64`` for ``--segments 64``, ``metis-max5000`` for ``--max-segment-nodes 5000``."""
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r}; one of {sorted(METHODS)}")
    if segments is not None:
        return f"{method}-{segments}"
    return f"{method}-max{max_segment_nodes}"


def partition_file(name: str, graph_id: str) -> str:
    return f"{PARTITIONS_DIR}/{name}/{graph_id}.npz"


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A compressed npz whose bytes depend only on the arrays (np.savez stamps the clock)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            body = io.BytesIO()
            np.lib.format.write_array(body, np.ascontiguousarray(value), allow_pickle=False)
            zf.writestr(info, body.getvalue())
    return buf.getvalue()


@dataclass(frozen=True)
class PartitionResult:
    """One graph's stored partition row (what the CLI summarises)."""

    row: dict
    partition: Partition
    reduced: str | None = None  # why it has fewer segments than asked (``reduction``)


def _row(name: str, graph_id: str, method: str, part: Partition, segments: int | None,
         max_segment_nodes: int | None, seconds: float) -> dict:
    return {
        "partition_id": f"{name}/{graph_id}", "partition": name, "graph_id": graph_id,
        "method": method, "requested_segments": segments,
        "max_segment_nodes": max_segment_nodes, "num_nodes": part.num_nodes,
        "num_segments": part.num_segments, "edge_cut": part.edge_cut,
        "num_edges": part.num_edges, "balance": part.balance,
        "segment_sizes": json.dumps(part.sizes.tolist()), "seconds": seconds,
        "file": partition_file(name, graph_id), "created_at": now(),
    }


def partition_dataset(dataset: Dataset, *, method: str = "metis", segments: int | None = None,
                      max_segment_nodes: int | None = None,
                      graph_ids: Iterable[str] | None = None, collection: str | None = None,
                      commit_every: int = 64,
                      progress: Callable[[str], None] | None = None) -> list[PartitionResult]:
    """Partition the selected graphs and store rows + files (committed every few graphs),
    holding the dataset's write lock throughout: a collection into it meanwhile is refused,
    and this run is refused at once while another one writes it."""
    with dataset_lock(dataset.root):
        dataset.refresh()
        return _partition(dataset, partition_name(method, segments, max_segment_nodes),
                          method, segments, max_segment_nodes, graph_ids, collection,
                          commit_every, progress)


def _partition(dataset: Dataset, name: str, method: str, segments: int | None,
               max_segment_nodes: int | None, graph_ids: Iterable[str] | None,
               collection: str | None, commit_every: int,
               progress: Callable[[str], None] | None) -> list[PartitionResult]:
    graphs = dataset.graphs()
    if collection is not None:
        graphs = graphs.filter(pl.col("collection") == collection)
    if graph_ids is not None:
        wanted = list(graph_ids)
        missing = sorted(set(wanted) - set(graphs["graph_id"].to_list()))
        if missing:
            raise DatasetError(f"{dataset.root}: no graph(s) {missing} in graphs.parquet")
        graphs = graphs.filter(pl.col("graph_id").is_in(wanted))
    results: list[PartitionResult] = []
    tx = dataset.transaction()
    pending: list[dict] = []
    for i, graph_id in enumerate(graphs["graph_id"].to_list()):
        if progress:
            progress(f"{name}: {graph_id} ({i + 1}/{graphs.height})")
        arrays = dataset.load_arrays(graph_id, ("node_opcode", "edge_index"))
        start = time.perf_counter()
        num_nodes = int(arrays["node_opcode"].shape[0])
        part = partition_graph(arrays["edge_index"], num_nodes, method=method,
                               segments=segments, max_segment_nodes=max_segment_nodes)
        row = _row(name, graph_id, method, part, segments, max_segment_nodes,
                   time.perf_counter() - start)
        tx.put_file(row["file"], npz_bytes({NODE_SEGMENT: part.node_segment}))
        pending.append(row)
        results.append(PartitionResult(row, part, reduction(
            part, segments_for(num_nodes, segments, max_segment_nodes))))
        if len(pending) >= commit_every:
            tx.put_rows(TABLE, "partition_id", [r["partition_id"] for r in pending], pending)
            tx.commit()
            pending = []
    if pending:
        tx.put_rows(TABLE, "partition_id", [r["partition_id"] for r in pending], pending)
        tx.commit()
    return results


def load_partition(dataset: Dataset, graph_id: str, name: str) -> np.ndarray:
    """``node_segment`` of a stored partition (raises DatasetError naming what is missing)."""
    table = dataset.table(TABLE)
    rows = table.filter(pl.col("partition_id") == f"{name}/{graph_id}") if table.height else table
    if not rows.height:
        raise DatasetError(f"{dataset.root}: no partition {name!r} of graph {graph_id!r}; "
                           f"run `tgt partition {dataset.root}` first")
    path = dataset.root / rows["file"][0]
    with read_npz(path) as npz:
        return npz[NODE_SEGMENT]


def stored_partitions(dataset: Dataset) -> list[str]:
    """Names of the partitionings present in the dataset."""
    table = dataset.table(TABLE)
    return sorted(table["partition"].unique().to_list()) if table.height else []
