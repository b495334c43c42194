"""GraphRecord → PreparedGraph: pruned, normalised, config-subsampled, split into segments.

Two passes, so normalisation never sees held-out graphs: :func:`load_raw` per graph (prune, HLO
extras, config subsample), :class:`FeatureStats` fitted on the train raws, then
:func:`finalize` (normalise, segment). A graph's arrays sit behind an ``EntryRef``: resident
(:class:`~tpugraphs_tools.baseline.graphstore.Entry`), or on the lazy path written to the
graph cache and read per batch (loading.py), so only sizes and config row views stay resident.
"""

from __future__ import annotations

from collections.abc import Callable
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
from tpugraphs_tools.baseline.graphstore import Entry, EntryRef, digest
from tpugraphs_tools.baseline.hlo_features import NUM_EXTRA, extra_features
from tpugraphs_tools.baseline.mismatch import (
    DEFAULT_SLOTS,
    MISMATCH_SLOTS,
    DefaultDiff,
    MismatchCounter,
)
from tpugraphs_tools.baseline.options import PrepareOptions
from tpugraphs_tools.features import NUM_NODE_FEATURES
from tpugraphs_tools.format import TILE_CONFIG_WIDTH

RAW_ARRAYS = ("opcode", "feat", "extra", "edges", "cfg_ids", "kept_nodes")
PREPARED_ARRAYS = ("opcode", "feat", "extra", "layout_cat", "cfg_ids")


@dataclass
class RawGraph:
    """One graph after :func:`load_raw`. The arrays live in ``data`` (resident, or in the
    graph store on the lazy path: graphstore.py); the config views are always resident."""

    info: GraphInfo
    data: EntryRef                   # RAW_ARRAYS
    cfg_feat: ConfigRows             # layout: int8 [c, nc, Fl]; tile: float32 [c, Ft]
    runtime: ConfigRows              # float64 [c] (tile: normalised by the default config)
    num_copies: ConfigRows | None
    num_nodes: int
    warnings: list[str] = field(default_factory=list)
    label_ci: ConfigRows | None = None   # float64 [c, 2] CI / label (tgt paired labels)
    default_row: np.ndarray | None = None  # the default config's layout values [nc, 18]

    @property
    def opcode(self) -> np.ndarray:              # int32 [n]
        return self.data.entry()["opcode"]

    @property
    def feat(self) -> np.ndarray:                # float32 [n, NODE_FEATURE_WIDTH]
        return self.data.entry()["feat"]

    @property
    def extra(self) -> np.ndarray:               # float32 [n, E]
        return self.data.entry()["extra"]

    @property
    def edges(self) -> np.ndarray:               # int64 [m, 2]
        return self.data.entry()["edges"]

    @property
    def cfg_ids(self) -> np.ndarray:             # int64 [nc]
        return self.data.entry()["cfg_ids"]

    @property
    def kept_nodes(self) -> np.ndarray:          # ids in the stored graph (pruning)
        return self.data.entry()["kept_nodes"]


@dataclass
class Segment:
    """A node subset with its internal edges (GST drops the edges between segments)."""

    nodes: np.ndarray       # int64 [ns] graph node ids, ascending
    edges: np.ndarray       # int64 [ms, 2] local ids
    cfg_pos: np.ndarray     # int64 [ks] positions in the graph's cfg_ids
    cfg_local: np.ndarray   # int64 [ks] local ids of those nodes


@dataclass
class PreparedGraph:
    """A normalised, segmented graph. Arrays in ``data`` (resident, or read per batch from
    the graph store); sizes and per-segment counts stay resident for sampling and chunking."""

    info: GraphInfo
    data: EntryRef                   # PREPARED_ARRAYS + flattened segments (SEGMENT_ARRAYS)
    cfg_feat: ConfigRows             # layout: int8 values [c, nc, Fl]; tile: float32 [c, Ft]
    runtime: ConfigRows              # float64 [c]
    num_copies: ConfigRows | None
    num_nodes: int
    segment_nodes: np.ndarray        # int64 [S] nodes per segment
    segment_cfgs: np.ndarray         # int64 [S] configurable nodes per segment
    label_ci: ConfigRows | None = None   # float64 [c, 2] CI / label (tgt paired labels)

    @property
    def num_configs(self) -> int:
        return len(self.runtime)

    @property
    def num_segments(self) -> int:
        return int(self.segment_nodes.size)

    @property
    def opcode(self) -> np.ndarray:
        return self.data.entry()["opcode"]

    @property
    def feat(self) -> np.ndarray:                # float32 [n, F] normalised
        return self.data.entry()["feat"]

    @property
    def extra(self) -> np.ndarray:               # float32 [n, E] normalised
        return self.data.entry()["extra"]

    @property
    def layout_cat(self) -> np.ndarray:          # int32 [n, 6] or [n, 0]
        return self.data.entry()["layout_cat"]

    @property
    def cfg_ids(self) -> np.ndarray:
        return self.data.entry()["cfg_ids"]

    @property
    def segments(self) -> list[Segment]:
        entry = self.data.entry()
        if "segments" not in entry.memo:
            entry.memo["segments"] = unflatten_segments(entry)
        segments: list[Segment] = entry.memo["segments"]
        return segments


def subsample(configs: GraphConfigs, options: PrepareOptions) -> GraphConfigs:
    """Seeded subsample to ``max_configs`` rows (a row view: nothing is read)."""
    count = len(configs.runtime)
    if count > options.max_configs:
        rng = np.random.default_rng([options.seed, count])
        configs = configs.take(np.sort(rng.choice(count, options.max_configs, replace=False)))
    return configs


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
        configs = in_memory(a, info.kind, record.num_copies, record.label_ci)
    count = len(configs.runtime)
    if count == 0:
        return None
    configs = subsample(configs, options)
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
    data = Entry({"opcode": a["node_opcode"][kept].astype(np.int32),
                  "feat": a["node_feat"][kept].astype(np.float32), "extra": extra[kept],
                  "edges": edges, "cfg_ids": cfg_ids, "kept_nodes": kept})
    return RawGraph(info, data, configs.feat, configs.runtime, configs.num_copies,
                    int(kept.size), notes, configs.label_ci)


@dataclass
class FeatureStats:
    """Normalisers for node features, extra features and tile config features."""

    node: Normalizer
    extra: Normalizer
    tile_config: Normalizer
    pad_minus_one: bool
    mismatch_features: bool = False
    default_slots: bool = False

    @classmethod
    def fit(cls, train: list[RawGraph], pad_minus_one: bool, mismatch_features: bool = False,
            default_slots: bool = False) -> FeatureStats:
        width_extra = train[0].extra.shape[1] if train else 0
        stats = cls(Normalizer.empty(NUM_NODE_FEATURES), Normalizer.empty(width_extra),
                     Normalizer.empty(TILE_CONFIG_WIDTH), pad_minus_one, mismatch_features,
                     default_slots)
        for g in train:
            stats.node.update(stats._node_columns(g.feat))
            stats.extra.update(g.extra)
            if not g.info.spec.per_node_configs:
                stats.tile_config.update(g.cfg_feat.read())
        return stats

    def key(self) -> str:
        """Digest of everything in these statistics (graph cache keys)."""
        arrays = (a for n in (self.node, self.extra, self.tile_config) for a in (n.lo, n.hi))
        return digest(self.pad_minus_one, self.mismatch_features, self.default_slots, *arrays)

    def _node_columns(self, feat: np.ndarray) -> np.ndarray:
        if not self.pad_minus_one:
            return feat
        out = feat.copy()
        out[:, LAYOUT_COLUMNS] = 0.0  # carried by the categories instead
        return out


SEGMENT_ARRAYS = ("seg_nodes", "seg_node_off", "seg_edges", "seg_edge_off", "seg_cfg_pos",
                  "seg_cfg_local", "seg_cfg_off")


def _segment_arrays(node_segment: np.ndarray, edges: np.ndarray, cfg_ids: np.ndarray
                    ) -> dict[str, np.ndarray]:
    """The segments as flat arrays with offsets (SEGMENT_ARRAYS; empty segments dropped)."""
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
    e_counts = np.bincount(e_seg, minlength=counts.size)
    c_seg = node_segment[cfg_ids]
    c_order = np.argsort(c_seg, kind="stable")      # positions ascending within a segment
    c_counts = np.bincount(c_seg, minlength=counts.size)
    used = counts > 0
    return {"seg_nodes": order.astype(np.int64),
            "seg_node_off": np.concatenate([[0], np.cumsum(counts[used])]).astype(np.int64),
            "seg_edges": e_local[e_order].astype(np.int64).reshape(-1, 2),
            "seg_edge_off": np.concatenate([[0], np.cumsum(e_counts[used])]).astype(np.int64),
            "seg_cfg_pos": c_order.astype(np.int64),
            "seg_cfg_local": local[cfg_ids[c_order]].astype(np.int64),
            "seg_cfg_off": np.concatenate([[0], np.cumsum(c_counts[used])]).astype(np.int64)}


def unflatten_segments(a: dict[str, np.ndarray]) -> list[Segment]:
    """:class:`Segment` views of the flat SEGMENT_ARRAYS."""
    no, eo, co = a["seg_node_off"], a["seg_edge_off"], a["seg_cfg_off"]
    return [Segment(a["seg_nodes"][no[s]:no[s + 1]], a["seg_edges"][eo[s]:eo[s + 1]],
                    a["seg_cfg_pos"][co[s]:co[s + 1]], a["seg_cfg_local"][co[s]:co[s + 1]])
            for s in range(no.size - 1)]


def prepared_configs(raw: RawGraph, stats: FeatureStats) -> ConfigRows:
    """``raw``'s config features as the model reads them (tile: normalised on read)."""
    if raw.info.spec.per_node_configs:
        rows = raw.cfg_feat     # already int8 categories (configstore.layout_values)
        steps: list[Callable[[np.ndarray], np.ndarray]] = []
        nc, slots = rows.shape[1:]
        if stats.mismatch_features:
            steps.append(MismatchCounter(raw.feat, np.asarray(raw.edges),
                                         np.asarray(raw.cfg_ids)))
            slots += MISMATCH_SLOTS
        if stats.default_slots:
            steps.append(DefaultDiff(raw.default_row))
            slots += DEFAULT_SLOTS
        if not steps:
            return rows
        return rows.with_transform(_chain(steps), (nc, slots))
    return raw.cfg_feat.with_transform(stats.tile_config, (stats.tile_config.width,))


def _chain(steps: list[Callable[[np.ndarray], np.ndarray]]
           ) -> Callable[[np.ndarray], np.ndarray]:
    def run(rows: np.ndarray) -> np.ndarray:
        for step in steps:
            rows = step(rows)
        return rows
    return run


def prepared_arrays(raw: RawGraph, stats: FeatureStats,
                    node_segment: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Normalised arrays and flat segments of ``raw`` (PREPARED_ARRAYS + SEGMENT_ARRAYS)."""
    feat = stats.node(stats._node_columns(raw.feat))
    extra = stats.extra(raw.extra) if raw.extra.shape[1] else np.asarray(raw.extra)
    layout_cat = layout_categories(raw.feat) if stats.pad_minus_one else \
        np.zeros((raw.num_nodes, 0), np.int32)
    if node_segment is None:
        node_segment = np.zeros(raw.num_nodes, np.int64)
    edges, cfg_ids = np.asarray(raw.edges), np.asarray(raw.cfg_ids)
    return {"opcode": np.asarray(raw.opcode), "feat": feat, "extra": extra,
            "layout_cat": layout_cat, "cfg_ids": cfg_ids,
            **_segment_arrays(np.asarray(node_segment, np.int64), edges, cfg_ids)}


def segment_counts(a: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, configurable nodes) per segment of flat SEGMENT_ARRAYS."""
    return (np.diff(a["seg_node_off"]).astype(np.int64),
            np.diff(a["seg_cfg_off"]).astype(np.int64))


def prepared_graph(raw: RawGraph, stats: FeatureStats, data: EntryRef, num_nodes: int,
                   counts: tuple[np.ndarray, np.ndarray]) -> PreparedGraph:
    """The graph over ``data`` (resident or stored), with ``raw``'s config views."""
    return PreparedGraph(raw.info, data, prepared_configs(raw, stats), raw.runtime,
                         raw.num_copies, num_nodes, *counts, label_ci=raw.label_ci)


def finalize(raw: RawGraph, stats: FeatureStats,
             node_segment: np.ndarray | None = None) -> PreparedGraph:
    """Normalise and segment (``node_segment`` None = one segment, the whole graph)."""
    arrays = prepared_arrays(raw, stats, node_segment)
    return prepared_graph(raw, stats, Entry(arrays), raw.num_nodes, segment_counts(arrays))
