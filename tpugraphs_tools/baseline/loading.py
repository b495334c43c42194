"""Raw and prepared graphs of one collection: all resident, or a bounded number at a time.

``--in-memory-configs`` keeps every graph's arrays (and config arrays) in memory, as before.
The lazy path (default) keeps per graph only metadata and config row views: per-config arrays
come from configstore.py, the graph structure from graphstore.py, written once per content
key and read per batch; the arrays of at most ``LRU_GRAPHS`` (≥ ``--batch-graphs``) graphs
are open at a time, so memory does not grow with the number of graphs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tpugraphs_tools.baseline.configstore import ConfigCache
from tpugraphs_tools.baseline.data import GraphInfo, GraphSource, TgtSource
from tpugraphs_tools.baseline.defaults import default_row
from tpugraphs_tools.baseline.graphstore import LRU_GRAPHS, GraphStore, Stored, digest
from tpugraphs_tools.baseline.options import BaselineOptions
from tpugraphs_tools.baseline.prepare import (
    RAW_ARRAYS,
    FeatureStats,
    PreparedGraph,
    RawGraph,
    finalize,
    load_raw,
    prepared_arrays,
    prepared_graph,
    segment_counts,
    subsample,
)
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.partition import dense_relabel, load_partition, partition_graph

Progress = Callable[[str], None]


class Loader:
    """Loads a collection's graphs from ``source`` with the options ``opts``, on the path
    ``opts.prepare.lazy_configs`` selects."""

    def __init__(self, source: GraphSource, opts: BaselineOptions) -> None:
        self.source, self.opts = source, opts
        lazy = opts.prepare.lazy_configs
        root = source.cache_root()
        self.configs = ConfigCache(root) if lazy else None
        self.graphs = GraphStore(root, max(LRU_GRAPHS, opts.train.batch_graphs)) \
            if lazy else None
        self._segments: dict[str, np.ndarray] = {}    # in-memory path: GST segments per graph

    # -- raw graphs ---------------------------------------------------------------------------
    def load(self, infos: list[GraphInfo], progress: Progress | None = None
             ) -> tuple[list[RawGraph], list[str]]:
        """Raw graphs with configs (one at a time from the source), and notes on the rest."""
        notes: list[str] = []
        raws: list[RawGraph] = []
        for i, info in enumerate(infos):
            if progress:
                progress(f"loading {info.graph_id} ({i + 1}/{len(infos)})")
            raw = self._raw(info)
            if raw is None:
                notes.append(f"{info.graph_id}: no measured configs, skipped")
                continue
            notes.extend(f"{info.graph_id}: {w}" for w in raw.warnings)
            if self.opts.prepare.default_slots and info.spec.per_node_configs:
                raw.default_row = default_row(self.source, info, self.configs)
            raws.append(raw)
        return raws, notes

    def _raw(self, info: GraphInfo) -> RawGraph | None:
        source, options = self.source, self.opts.prepare
        if self.configs is None or self.graphs is None:
            return load_raw(source.load(info), options)
        configs = self.configs.open(source, info.graph_id, info.kind)
        if len(configs.runtime) == 0:
            return None
        folder = self.graphs.folder(info.graph_id, self._raw_key(info))
        if not self.graphs.has(folder):   # structure now, per-config arrays on demand
            raw = load_raw(source.load(info, with_configs=False), options, configs)
            if raw is None:
                return None
            arrays = {n: raw.data.entry()[n] for n in RAW_ARRAYS}
            self.graphs.write(folder, arrays, {"num_nodes": raw.num_nodes,
                                               "warnings": raw.warnings}, replace_older=True)
        meta = self.graphs.meta(folder)
        view = subsample(configs, options)
        return RawGraph(info, Stored(self.graphs, folder), view.feat, view.runtime,
                        view.num_copies, int(meta["num_nodes"]), list(meta["warnings"]),
                        view.label_ci)

    def _raw_key(self, info: GraphInfo) -> str:
        """The npz / configs checksums and the options that shape the raw arrays."""
        options = self.opts.prepare
        hlo = ""
        if options.hlo_features:
            try:
                if isinstance(self.source, TgtSource):
                    hlo = digest(self.source.dataset.hlo_text(info.graph_id))
            except Exception as exc:  # load_raw notes it; here only the key
                hlo = f"unreadable:{type(exc).__name__}"
        return "|".join(["raw", self.source.content_key(info.graph_id),
                         f"prune={options.prune}", f"hlo={options.hlo_features}:{hlo}"])

    # -- prepared graphs ----------------------------------------------------------------------
    def prepare(self, raws: list[RawGraph], fit_on: list[RawGraph]) -> list[PreparedGraph]:
        """Normalise with statistics of ``fit_on`` only (a streaming pass over them); GST
        segments computed once per graph."""
        return self.apply(raws, self.fit_stats(fit_on))

    def fit_stats(self, fit_on: list[RawGraph]) -> FeatureStats:
        """Normalisation statistics of ``fit_on`` (the train graphs or views)."""
        return FeatureStats.fit(fit_on, self.opts.prepare.pad_minus_one,
                                self.opts.prepare.mismatch_features,
                                self.opts.prepare.default_slots)

    def apply(self, raws: list[RawGraph], stats: FeatureStats) -> list[PreparedGraph]:
        """``raws`` normalised with ``stats`` (fitted here or read from a saved model)."""
        if self.graphs is None:
            return [finalize(raw, stats, self._node_segment(raw)) for raw in raws]
        stats_key = stats.key()
        return [self._stored(raw, stats, stats_key) for raw in raws]

    def _stored(self, raw: RawGraph, stats: FeatureStats, stats_key: str) -> PreparedGraph:
        assert self.graphs is not None and isinstance(raw.data, Stored)
        seg_key, node_segment = self._segment_key(raw)
        folder = raw.data.folder / f"prep-{digest(stats_key, seg_key)}"
        if not self.graphs.has(folder):
            arrays = prepared_arrays(raw, stats, node_segment() if node_segment else None)
            nodes, cfgs = segment_counts(arrays)
            self.graphs.write(folder, arrays, {"num_nodes": raw.num_nodes,
                                               "segment_nodes": nodes.tolist(),
                                               "segment_cfgs": cfgs.tolist()})
        meta = self.graphs.meta(folder)
        counts = (np.asarray(meta["segment_nodes"], np.int64),
                  np.asarray(meta["segment_cfgs"], np.int64))
        return prepared_graph(raw, stats, Stored(self.graphs, folder), int(meta["num_nodes"]),
                              counts)

    def _segment_key(self, raw: RawGraph) -> tuple[str, Callable[[], np.ndarray] | None]:
        """(key, node → segment) of the GST segmentation; ("whole", None) without GST."""
        opts = self.opts
        if not opts.train.gst:
            return "whole", None
        if opts.partition is not None:      # stored: the key is the segmentation itself
            seg = self._segmentation(raw)
            return f"partition:{digest(seg)}", lambda: seg
        assert isinstance(raw.data, Stored) and self.graphs is not None
        key = f"{opts.segment_method}:{opts.segment_nodes}"
        path = raw.data.folder / f"segments-{digest(key)[:16]}.npy"
        graphs = self.graphs
        return key, lambda: graphs.array(path, lambda: self._segmentation(raw))

    def _node_segment(self, raw: RawGraph) -> np.ndarray | None:
        if not self.opts.train.gst:
            return None
        gid = raw.info.graph_id
        if gid not in self._segments:
            self._segments[gid] = self._segmentation(raw)
        return self._segments[gid]

    def _segmentation(self, raw: RawGraph) -> np.ndarray:
        opts, source = self.opts, self.source
        if opts.partition is not None:
            if not isinstance(source, TgtSource):
                raise DatasetError("--partition needs a tgt dataset (run `tgt partition` on it)")
            seg = load_partition(source.dataset, raw.info.graph_id,
                                 opts.partition)[raw.kept_nodes]
            return dense_relabel(seg.astype(np.int64), int(seg.max()) + 1 if seg.size else 1)
        return partition_graph(np.asarray(raw.edges), raw.num_nodes, method=opts.segment_method,
                               max_segment_nodes=opts.segment_nodes).node_segment
