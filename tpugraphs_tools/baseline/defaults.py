"""The default config's feature row per graph: what "non-default" means for the heuristics.

A tgt dataset marks the default config (``is_default``) and its npz row in configs.parquet; an
official tree marks none, so the heuristics that compare with the default are not scored there
(a note says so). Rows are read through the repacked config cache when the lazy path built
it, else from the npz (one array, once per graph).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tpugraphs_tools.baseline.configstore import ConfigCache, layout_values
from tpugraphs_tools.baseline.data import GraphInfo, GraphSource, TgtSource
from tpugraphs_tools.store import read_npz


def default_row_index(source: GraphSource, graph_id: str) -> int | None:
    """npz row of the graph's ok default config; None when the source marks none."""
    if not isinstance(source, TgtSource):
        return None
    rows = source.dataset.configs_of(graph_id)
    if "is_default" not in rows.columns:
        return None
    found = rows.filter(pl.col("is_default").fill_null(False) & (pl.col("status") == "ok")
                        & pl.col("npz_row").is_not_null())["npz_row"]
    return int(found[0]) if found.len() else None


def default_row(source: GraphSource, info: GraphInfo, cache: ConfigCache | None
                ) -> np.ndarray | None:
    """The default config's features as the baseline holds them (layout: int8 values
    [nc, 18]; tile: float32 [24], untransformed); None when unknown."""
    row = default_row_index(source, info.graph_id)
    if row is None:
        return None
    spec = info.spec
    if cache is not None:
        feat = cache.open(source, info.graph_id, info.kind).feat
        return np.asarray(feat[np.array([row])][0]) if row < len(feat) else None
    path = source.npz_file(info.graph_id)
    with read_npz(path) as npz:
        if spec.config_feat_key not in npz.files:
            return None
        values = npz[spec.config_feat_key]
    if row >= values.shape[0]:
        return None
    picked = values[row]
    return layout_values(picked) if spec.per_node_configs else picked.astype(np.float32)


def default_rows(source: GraphSource, infos: list[GraphInfo], cache: ConfigCache | None
                 ) -> dict[str, np.ndarray]:
    """graph_id → default row, for the graphs whose default is known."""
    out = {}
    for info in infos:
        row = default_row(source, info, cache)
        if row is not None:
            out[info.graph_id] = row
    return out
