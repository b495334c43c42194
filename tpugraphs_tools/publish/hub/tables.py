"""Published tables: graphs and configs with their arrays as Parquet list columns.

Each graph row carries its per-node/per-edge arrays and each config row its own
``node_config_feat`` (layout) or ``config_feat`` (tile), so a reader needs nothing but Parquet.
Columns derive from schemas/*.json, so a column added there is published without code changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import (
    LAYOUT,
    LAYOUT_CONFIG_WIDTH,
    NODE_FEATURE_WIDTH,
    TILE,
    TILE_CONFIG_WIDTH,
    collection_of,
)
from tpugraphs_tools.store import arrow_schema, load_schema

LOCAL_COLUMNS = ("npz_file", "hlo_file")  # paths inside the tgt dataset: meaningless elsewhere
GRAPH_ARRAYS: dict[str, tuple[pa.DataType, str]] = {
    "node_feat": (pa.list_(pa.list_(pa.float32(), NODE_FEATURE_WIDTH)),
                  f"float32 [num_nodes, {NODE_FEATURE_WIDTH}]: TpuGraphs node features"),
    "node_opcode": (pa.list_(pa.uint8()), "uint8 [num_nodes]: HLO opcode id per node"),
    "edge_index": (pa.list_(pa.list_(pa.int64(), 2)),
                   "int64 [num_edges, 2]: edge [u, v] means u consumes v"),
    "node_splits": (pa.list_(pa.int64()),
                    "int64 [s]: node index boundaries of major computations"),
    "node_config_ids": (pa.list_(pa.int64()),
                        "int64 [num_configurable]: node ids of the configurable nodes"),
}
CONFIG_EXTRA: dict[str, tuple[pa.DataType, str]] = {
    "split": (pa.string(), "train | valid | test: the split of the config's graph"),
    "collection": (pa.string(), "layout | tile: the collection of the config's graph"),
    "program": (pa.string(), "the program of the config's graph"),
}
CONFIG_ARRAYS: dict[str, tuple[pa.DataType, str]] = {
    LAYOUT.config_feat_key: (pa.list_(pa.list_(pa.float32(), LAYOUT_CONFIG_WIDTH)),
                             f"float32 [num_configurable, {LAYOUT_CONFIG_WIDTH}]: layout config "
                             "features (ok layout configs; null otherwise)"),
    TILE.config_feat_key: (pa.list_(pa.float32(), TILE_CONFIG_WIDTH),
                           f"float32 [{TILE_CONFIG_WIDTH}]: tile config features (ok tile "
                           "configs; null otherwise)"),
    "config_runtime": (pa.int64(), "int64 ns: the TpuGraphs runtime label (ok configs)"),
    "config_runtime_normalizer": (pa.int64(), "int64 ns: tile runtime normaliser (tile ok "
                                              "configs)"),
}
CONFIG_CHUNK = 2048


def _fields(table: str, skip: tuple[str, ...] = ()) -> list[pa.Field]:
    return [f.with_nullable(True) for f in arrow_schema(table) if f.name not in skip]


def graphs_schema() -> pa.Schema:
    return pa.schema(_fields("graphs", LOCAL_COLUMNS)
                     + [pa.field(k, t) for k, (t, _) in GRAPH_ARRAYS.items()])


def configs_schema() -> pa.Schema:
    extra = [pa.field(k, t) for k, (t, _) in {**CONFIG_EXTRA, **CONFIG_ARRAYS}.items()]
    return pa.schema(_fields("configs") + extra)


def descriptions(table: str) -> dict[str, str]:
    """One line per published column (schema descriptions, else the column's type)."""
    props = load_schema(table)["properties"]
    out = {name: props[name].get("description", "") for name in props}
    extra = GRAPH_ARRAYS if table == "graphs" else {**CONFIG_EXTRA, **CONFIG_ARRAYS}
    out.update({k: d for k, (_, d) in extra.items()})
    return out


def _nested(values: np.ndarray, width: int | None, offsets: np.ndarray,
            mask: np.ndarray | None = None) -> pa.Array:
    """list<fixed_size_list<width>> (or list<scalar> when width is None) from flat values."""
    inner = pa.array(np.ascontiguousarray(values).reshape(-1))
    if width is not None:
        inner = pa.FixedSizeListArray.from_arrays(inner, width)
    mask_arr = None if mask is None else pa.array(mask)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), inner, mask=mask_arr)


def _as(arr: np.ndarray, dtype: str, width: int | None, where: str) -> np.ndarray:
    """``arr`` in the published dtype and shape; a conversion must keep every value."""
    arr = np.asarray(arr)
    if arr.dtype != np.dtype(dtype):
        cast = arr.astype(dtype)
        if not np.array_equal(cast, arr):
            raise DatasetError(f"{where}: values do not fit {dtype}")
        arr = cast
    if width is None:
        return arr.reshape(-1)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise DatasetError(f"{where}: shape {arr.shape}, expected (*, {width})")
    return arr


# key -> (dtype, inner width or None): a graph array's published dtype, from the format.
_GRAPH_DTYPES: dict[str, tuple[str, int | None]] = {
    a.key: (a.dtype, a.dims[1] if len(a.dims) == 2 and isinstance(a.dims[1], int) else None)
    for a in LAYOUT.arrays if a.key in GRAPH_ARRAYS}


def graph_table(row: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> pa.Table:
    """One published graph row (a 1-row table)."""
    schema = graphs_schema()
    columns: dict[str, pa.Array] = {}
    for f in schema:
        if f.name in GRAPH_ARRAYS:
            if arrays.get(f.name) is None:
                columns[f.name] = pa.nulls(1, f.type)
                continue
            dtype, width = _GRAPH_DTYPES[f.name]
            arr = _as(arrays[f.name], dtype, width, f"graph {row['graph_id']} key {f.name!r}")
            columns[f.name] = _nested(arr, width, np.array([0, arr.shape[0]]))
        else:
            value = split if f.name == "split" else row.get(f.name)
            columns[f.name] = pa.array([value], f.type)
    return pa.table(columns, schema=schema)


def _pick(rows: list[dict[str, Any]], count: int, graph_id: str) -> np.ndarray:
    """npz row per config row (-1: none), checked against the graph's config arrays."""
    idx = np.array([-1 if r.get("npz_row") is None else int(r["npz_row"]) for r in rows],
                   dtype=np.int64)
    bad = (idx < -1) | (idx >= count)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(f"configs.parquet: graph {graph_id} config_index "
                           f"{rows[i]['config_index']} has npz_row {int(idx[i])} but its npz "
                           f"holds {count} configs")
    return idx


def _gather(values: np.ndarray, idx: np.ndarray, valid: np.ndarray) -> pa.Array:
    """int64 ``values[idx]`` where ``valid``, null elsewhere."""
    out = np.zeros(idx.shape[0], np.int64)
    out[valid] = values.reshape(-1)[idx[valid]]
    return pa.array(out, pa.int64(), mask=~valid)


def _config_arrays(idx: np.ndarray, arrays: dict[str, np.ndarray], collection: str
                   ) -> dict[str, pa.Array]:
    valid = idx >= 0
    picked = idx[valid]
    n = idx.shape[0]
    out = {"config_runtime": _gather(arrays["config_runtime"], idx, valid),
           LAYOUT.config_feat_key: pa.nulls(n, CONFIG_ARRAYS[LAYOUT.config_feat_key][0]),
           TILE.config_feat_key: pa.nulls(n, CONFIG_ARRAYS[TILE.config_feat_key][0]),
           "config_runtime_normalizer": pa.nulls(n, pa.int64())}
    spec = collection_of(collection)
    key, width = spec.config_feat_key, spec.config_width
    if spec.per_node_configs:
        feat = np.asarray(arrays[key], np.float32)
        nc = feat.shape[1]
        offsets = np.concatenate([[0], np.cumsum(np.where(valid, nc, 0))])
        out[key] = _nested(feat[picked], width, offsets, ~valid)
    else:
        full = np.zeros((n, width), np.float32)
        full[valid] = np.asarray(arrays[key], np.float32)[picked]
        out[key] = pa.FixedSizeListArray.from_arrays(
            pa.array(full.reshape(-1)), width, mask=pa.array(~valid))
    if spec.normalizer_key is not None:
        out["config_runtime_normalizer"] = _gather(arrays[spec.normalizer_key], idx, valid)
    return out


def config_tables(rows: list[dict[str, Any]], arrays: dict[str, np.ndarray],
                  graph: dict[str, Any], split: str) -> Iterator[pa.Table]:
    """A graph's published config rows, in chunks that keep big layout graphs in memory."""
    schema = configs_schema()
    count = int(arrays["config_runtime"].shape[0])
    idx_all = _pick(rows, count, graph["graph_id"])
    context = {"split": split, "collection": graph["collection"], "program": graph["program"]}
    for start in range(0, len(rows), CONFIG_CHUNK):
        chunk = rows[start:start + CONFIG_CHUNK]
        built = _config_arrays(idx_all[start:start + CONFIG_CHUNK], arrays, graph["collection"])
        columns = {}
        for f in schema:
            if f.name in built:
                columns[f.name] = built[f.name]
            elif f.name in context:
                columns[f.name] = pa.array([context[f.name]] * len(chunk), f.type)
            else:
                columns[f.name] = pa.array([r.get(f.name) for r in chunk], f.type)
        yield pa.table(columns, schema=schema)
