"""GraphRecord → PreparedGraph: pruned, normalised, config-subsampled, split into segments.

Two passes, so normalisation never sees held-out graphs: :func:`load_raw` per graph (prune, HLO
extras, config subsample), :class:`FeatureStats` fitted on the train raws, then
:func:`finalize` (normalise, segment).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpugraphs_tools.baseline.configstore import ConfigRows, GraphConfigs, in_memory
from tpugraphs_tools.baseline.data import GraphInfo, GraphRecord
from tpugraphs_tools.baseline.features import (
    LAYOUT_COLUMNS,
    Normalizer,
    induced,
    layout_categories,
    prune_nodes,
)
from tpugraphs_tools.baseline.hlo_features import NUM_EXTRA, extra_features
from tpugraphs_tools.features import NUM_NODE_FEATURES
from tpugraphs_tools.format import TILE_CONFIG_WIDTH


@dataclass(frozen=True)
class PrepareOptions:
    prune: bool = False
    pad_minus_one: bool = False     # node layout columns → categories with −1 padding
    hlo_features: bool = False
    max_configs: int = 1000         # per graph, seeded subsample beyond this
    seed: int = 0
    lazy_configs: bool = True       # per-config arrays from the repacked cache (configstore)


@dataclass
class RawGraph:
    info: GraphInfo
    opcode: np.ndarray               # int32 [n]
    feat: np.ndarray                 # float32 [n, NODE_FEATURE_WIDTH]
    extra: np.ndarray                # float32 [n, E]
    edges: np.ndarray                # int64 [m, 2]
    cfg_ids: np.ndarray              # int64 [nc]
    cfg_feat: ConfigRows             # layout: int8 [c, nc, Fl]; tile: float32 [c, Ft]
    runtime: ConfigRows              # float64 [c] (tile: normalised by the default config)
    num_copies: ConfigRows | None
    kept_nodes: np.ndarray           # ids in the stored graph (pruning)
    warnings: list[str] = field(default_factory=list)

    @property
    def num_nodes(self) -> int:
        return int(self.opcode.shape[0])


@dataclass
class Segment:
    """A node subset with its internal edges (GST drops the edges between segments)."""

    nodes: np.ndarray       # int64 [ns] graph node ids, ascending
    edges: np.ndarray       # int64 [ms, 2] local ids
    cfg_pos: np.ndarray     # int64 [ks] positions in the graph's cfg_ids
    cfg_local: np.ndarray   # int64 [ks] local ids of those nodes


@dataclass
class PreparedGraph:
    info: GraphInfo
    opcode: np.ndarray
    feat: np.ndarray                 # float32 [n, F] normalised
    extra: np.ndarray                # float32 [n, E] normalised
    layout_cat: np.ndarray           # int32 [n, 6] or [n, 0]
    cfg_ids: np.ndarray
    cfg_feat: ConfigRows             # layout: int8 values [c, nc, Fl]; tile: float32 [c, Ft]
    runtime: ConfigRows              # float64 [c]
    num_copies: ConfigRows | None
    segments: list[Segment]

    @property
    def num_configs(self) -> int:
        return len(self.runtime)

    @property
    def num_nodes(self) -> int:
        return int(self.opcode.shape[0])


def load_raw(record: GraphRecord, options: PrepareOptions,
             configs: GraphConfigs | None = None) -> RawGraph | None:
    """Arrays of one graph ready for statistics; None when it has no usable configs.

    ``configs``: the graph's per-config arrays read lazily (configstore); None takes them
    from ``record.arrays``. The subsample is a row view either way, so both give the same
    rows.
    """
    a = record.arrays
    info = record.info
    notes: list[str] = []
    if configs is None:
        configs = in_memory(a, info.kind, record.num_copies)
    count = len(configs.runtime)
    if count == 0:
        return None
    if count > options.max_configs:
        rng = np.random.default_rng([options.seed, count])
        configs = configs.take(np.sort(rng.choice(count, options.max_configs, replace=False)))
    n = int(a["node_opcode"].shape[0])
    edges = a["edge_index"].astype(np.int64).reshape(-1, 2)
    cfg_ids = a.get("node_config_ids", np.zeros(0, np.int64)).astype(np.int64)
    extra = np.zeros((n, NUM_EXTRA if options.hlo_features else 0), np.float32)
    if options.hlo_features:
        if record.hlo_text is None:
            notes.append("no stored HLO: extra features are zeros")
        else:
            try:
                extra = extra_features(record.hlo_text(), n)
            except Exception as exc:  # a graph without usable HLO still trains
                notes.append(f"extra features skipped: {exc}")
    kept = np.arange(n)
    if options.prune:
        kept = prune_nodes(a["node_opcode"], edges, cfg_ids)
        remap = np.full(n, -1, np.int64)
        remap[kept] = np.arange(kept.size)
        edges = induced(edges, kept, n)
        cfg_ids = remap[cfg_ids]
    return RawGraph(info, a["node_opcode"][kept].astype(np.int32),
                    a["node_feat"][kept].astype(np.float32), extra[kept], edges, cfg_ids,
                    configs.feat, configs.runtime, configs.num_copies, kept, notes)


@dataclass
class FeatureStats:
    """Normalisers for node features, extra features and tile config features."""

    node: Normalizer
    extra: Normalizer
    tile_config: Normalizer
    pad_minus_one: bool

    @classmethod
    def fit(cls, train: list[RawGraph], pad_minus_one: bool) -> FeatureStats:
        width_extra = train[0].extra.shape[1] if train else 0
        stats = cls(Normalizer.empty(NUM_NODE_FEATURES), Normalizer.empty(width_extra),
                     Normalizer.empty(TILE_CONFIG_WIDTH), pad_minus_one)
        for g in train:
            stats.node.update(stats._node_columns(g.feat))
            stats.extra.update(g.extra)
            if not g.info.spec.per_node_configs:
                stats.tile_config.update(g.cfg_feat.read())
        return stats

    def _node_columns(self, feat: np.ndarray) -> np.ndarray:
        if not self.pad_minus_one:
            return feat
        out = feat.copy()
        out[:, LAYOUT_COLUMNS] = 0.0  # carried by the categories instead
        return out


def _segments(node_segment: np.ndarray, edges: np.ndarray, cfg_ids: np.ndarray) -> list[Segment]:
    n = node_segment.shape[0]
    order = np.argsort(node_segment, kind="stable")
    counts = np.bincount(node_segment)
    starts = np.concatenate([[0], np.cumsum(counts)])
    local = np.empty(n, np.int64)
    local[order] = np.arange(n) - np.repeat(starts[:-1], counts)
    same = node_segment[edges[:, 0]] == node_segment[edges[:, 1]] if edges.size else \
        np.zeros(0, bool)
    e_seg = node_segment[edges[same, 0]] if edges.size else np.zeros(0, np.int64)
    e_local = local[edges[same]] if edges.size else np.zeros((0, 2), np.int64)
    e_order = np.argsort(e_seg, kind="stable")
    e_starts = np.concatenate([[0], np.cumsum(np.bincount(e_seg, minlength=counts.size))])
    c_seg = node_segment[cfg_ids]
    out = []
    for s in range(counts.size):
        if counts[s] == 0:
            continue
        pos = np.nonzero(c_seg == s)[0]
        out.append(Segment(order[starts[s]:starts[s + 1]],
                           e_local[e_order[e_starts[s]:e_starts[s + 1]]],
                           pos, local[cfg_ids[pos]]))
    return out


def finalize(raw: RawGraph, stats: FeatureStats,
             node_segment: np.ndarray | None = None) -> PreparedGraph:
    """Normalise and segment (``node_segment`` None = one segment, the whole graph)."""
    feat = stats.node(stats._node_columns(raw.feat))
    extra = stats.extra(raw.extra) if raw.extra.shape[1] else raw.extra
    layout_cat = layout_categories(raw.feat) if stats.pad_minus_one else \
        np.zeros((raw.num_nodes, 0), np.int32)
    cfg_feat = raw.cfg_feat     # layout: already int8 categories (configstore.layout_values)
    if not raw.info.spec.per_node_configs:
        cfg_feat = cfg_feat.with_transform(stats.tile_config, stats.tile_config.width)
    if node_segment is None:
        node_segment = np.zeros(raw.num_nodes, np.int64)
    segments = _segments(np.asarray(node_segment, np.int64), raw.edges, raw.cfg_ids)
    return PreparedGraph(raw.info, raw.opcode, feat, extra, layout_cat, raw.cfg_ids, cfg_feat,
                         raw.runtime, raw.num_copies, segments)
