"""One npz file, start to finish: headers, then small arrays whole, then big arrays streamed.

Order matters for memory: node_opcode, edge_index, node_config_ids, splits and runtimes are
small and read whole; node_feat and the config feature arrays are read in row chunks, keeping
only what later checks need (the rank of each configurable node, one hash per config).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tpugraphs_tools.format import LAYOUT, TILE, collection_of
from tpugraphs_tools.validate import graph_checks, value_checks
from tpugraphs_tools.validate.layout_values import LayoutConfigScan, node_ranks
from tpugraphs_tools.validate.npz_reader import NpzError, NpzReader
from tpugraphs_tools.validate.report import Report
from tpugraphs_tools.validate.structure_checks import (
    MAX_ARRAY_BYTES,
    FileLayout,
    as_int64,
    check_structure,
    detect_collection,
)

_SMALL_KEYS = ("node_opcode", "edge_index", "node_config_ids", "node_splits", "config_runtime",
               "config_runtime_normalizers")


@dataclass(frozen=True)
class NpzSummary:
    """Counts later cross-checks compare with the tables (None: not determinable)."""

    collection: str
    num_nodes: int | None
    num_edges: int | None
    num_configurable: int | None
    num_configs: int | None


def check_npz(path: Path, rel: str, collection: str | None, report: Report, *,
              hidden_runtimes_ok: bool = False, partial_layouts_ok: bool = False,
              max_array_bytes: int = MAX_ARRAY_BYTES) -> NpzSummary | None:
    """Run every structure/graph/value check on one npz; never holds more than one big chunk."""
    report.files_checked += 1
    try:
        reader = NpzReader(path)
    except NpzError as exc:
        report.emit("structure.unreadable", str(exc), rel)
        return None
    with reader:
        if collection is None:
            collection = detect_collection(reader)
            if collection is None:
                report.emit("dataset.collection_unknown", "neither node_config_feat (layout) "
                            "nor config_feat (tile) present; cannot choose checks", rel)
                return None
        layout = check_structure(reader, rel, collection, report, max_array_bytes)
        _FileCheck(reader, layout, rel, report, hidden_runtimes_ok, partial_layouts_ok).run()
    d = layout.dims
    return NpzSummary(collection, d.get("n"), d.get("m"), d.get("nc"), d.get("c"))


class _FileCheck:
    def __init__(self, reader: NpzReader, layout: FileLayout, rel: str, report: Report,
                 hidden_runtimes_ok: bool, partial_layouts_ok: bool = False) -> None:
        self.reader, self.layout, self.rel, self.report = reader, layout, rel, report
        self.hidden_ok = hidden_runtimes_ok
        self.partial_ok = partial_layouts_ok
        self.arrays: dict[str, np.ndarray] = {}

    def _read(self, key: str) -> np.ndarray | None:
        member = self.layout.usable.get(key)
        if member is None:
            return None
        try:
            return self.reader.read(member)
        except NpzError as exc:
            self.report.emit("structure.unreadable", str(exc), self.rel, key=key)
            self.layout.usable.pop(key, None)
            return None

    def run(self) -> None:
        for key in _SMALL_KEYS:
            arr = self._read(key)
            if arr is not None:
                self.arrays[key] = arr
        n = self.layout.dims.get("n")
        self._graph(n)
        ranks = self._node_feat(n)
        runtime = self.arrays.get("config_runtime")
        spec = collection_of(self.layout.collection)
        row_ids = (self._layout_configs(ranks) if spec.per_node_configs
                   else self._tile_configs())
        if runtime is not None:
            value_checks.check_runtimes(runtime, self.rel, "config_runtime", self.report,
                                        self.hidden_ok)
            if row_ids is not None and row_ids.shape[0] == runtime.shape[0]:
                value_checks.check_duplicate_runtimes(row_ids, runtime, self.rel,
                                                      spec.config_feat_key, self.report)
        norm = self.arrays.get("config_runtime_normalizers")
        if norm is not None:
            value_checks.check_normalizers(norm, self.rel, self.report, self.hidden_ok)

    def _graph(self, n: int | None) -> None:
        a, rel, report = self.arrays, self.rel, self.report
        opcodes = a.get("node_opcode")
        if opcodes is not None:
            opcodes = as_int64(opcodes)
            graph_checks.check_opcodes(opcodes, rel, report)
        if n is None:
            return
        if "edge_index" in a:
            graph_checks.check_edges(as_int64(a["edge_index"]), n, rel, report)
        if "node_config_ids" in a:
            graph_checks.check_config_ids(as_int64(a["node_config_ids"]), opcodes, n, rel,
                                          report)
        if "node_splits" in a:
            graph_checks.check_splits(as_int64(a["node_splits"]), n, rel, report)

    def _node_feat(self, n: int | None) -> np.ndarray | None:
        """Stream node_feat: finiteness, and the rank of each configurable node."""
        member = self.layout.usable.get("node_feat")
        if member is None:
            return None
        ids = self.arrays.get("node_config_ids")
        ids = as_int64(ids) if ids is not None else None
        ranks = np.full(0 if ids is None else ids.shape[0], -1, dtype=np.int8)
        scan = value_checks.FiniteScan(self.rel, "node_feat")
        try:
            for start, chunk in self.reader.chunks(member, reuse=True):
                scan.update(start, chunk)
                if ids is not None and ids.size:
                    stop = start + chunk.shape[0]
                    sel = np.flatnonzero((ids >= start) & (ids < stop))
                    ranks[sel] = node_ranks(chunk[ids[sel] - start])
        except NpzError as exc:
            self.report.emit("structure.unreadable", str(exc), self.rel, key="node_feat")
            return None
        scan.finish(self.report)
        return ranks if ids is not None else None

    def _layout_configs(self, ranks: np.ndarray | None) -> np.ndarray | None:
        member = self.layout.usable.get(LAYOUT.config_feat_key)
        if member is None:
            return None
        ids = self.arrays.get("node_config_ids")
        if ranks is not None and ranks.shape[0] != member.shape[1]:
            ranks = None  # nc mismatch already reported; ranks would be misaligned
        scan = LayoutConfigScan(self.rel, ids, ranks, partial_ok=self.partial_ok)
        try:
            for start, chunk in self.reader.chunks(member, reuse=True):
                scan.update(start, chunk)
        except NpzError as exc:
            self.report.emit("structure.unreadable", str(exc), self.rel, key=member.key)
            return None
        return scan.finish(self.report)

    def _tile_configs(self) -> np.ndarray | None:
        feat = self._read(TILE.config_feat_key)
        if feat is None:
            return None
        scan = value_checks.FiniteScan(self.rel, TILE.config_feat_key)
        scan.update(0, feat)
        scan.finish(self.report)
        if scan.count:
            return None
        return value_checks.tile_row_ids(feat)
