"""Partitioners: a graph's edges → one segment id per node.

Both methods return dense segment ids ordered by each segment's lowest node id, so segment 0
holds node 0 and (for the contiguous method) segment order is topological order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pymetis

from tpugraphs_tools.partition._csr import Csr, connected_csr, undirected_edges


@dataclass(frozen=True)
class Partition:
    """Segment per node plus the quality numbers stored beside it."""

    node_segment: np.ndarray  # int32 [n], ids 0..num_segments-1, none empty
    edge_cut: int             # undirected edges between different segments
    num_edges: int            # undirected edges in the graph

    @property
    def num_nodes(self) -> int:
        return int(self.node_segment.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.node_segment, minlength=1).astype(np.int64)

    @property
    def num_segments(self) -> int:
        return int(self.node_segment.max()) + 1 if self.num_nodes else 0

    @property
    def balance(self) -> float:
        """Largest segment over the mean segment (1.0 = perfectly even)."""
        sizes = self.sizes
        return float(sizes.max() / sizes.mean())


class Partitioner(Protocol):
    """A partition method: ``(edge_index [m, 2], num_nodes, k) → Partition`` (k ≥ 1)."""

    def __call__(self, edge_index: np.ndarray, num_nodes: int,
                 num_segments: int) -> Partition: ...


def dense_relabel(labels: np.ndarray, k: int) -> np.ndarray:
    """Renumber labels 0..s-1 by first occurrence, dropping empty ones (METIS may leave some)."""
    n = labels.shape[0]
    first = np.full(k, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n, dtype=np.int64))
    used = np.nonzero(first < n)[0]
    mapping = np.zeros(k, dtype=np.int32)
    mapping[used[np.argsort(first[used], kind="stable")]] = np.arange(used.size, dtype=np.int32)
    return mapping[labels]


def _cut(node_segment: np.ndarray, edges: np.ndarray) -> int:
    return int(np.count_nonzero(node_segment[edges[:, 0]] != node_segment[edges[:, 1]]))


def contiguous_partition(edge_index: np.ndarray, num_nodes: int, num_segments: int) -> Partition:
    """GST's TpuGraphs split: k node-id ranges whose sizes differ by at most one."""
    k = max(1, min(num_segments, num_nodes))
    seg = (np.arange(num_nodes, dtype=np.int64) * k // max(num_nodes, 1)).astype(np.int32)
    edges = undirected_edges(edge_index, num_nodes)
    return Partition(seg, _cut(seg, edges), int(edges.shape[0]))


def metis_options() -> pymetis.Options:
    return pymetis.Options(contig=1)


def metis_csr(csr: Csr, num_segments: int) -> tuple[int, np.ndarray]:
    """Raw k-way METIS call with contiguous parts: (edge cut, part per node)."""
    adjacency = pymetis.CSRAdjacency(adj_starts=csr.indptr, adjacent=csr.indices)
    result = pymetis.part_graph(num_segments, adjacency=adjacency, options=metis_options(),
                                recursive=False)
    return int(result.edge_cuts), np.asarray(result.vertex_part)


def metis_partition(edge_index: np.ndarray, num_nodes: int, num_segments: int) -> Partition:
    """METIS k-way with contiguous parts on the undirected graph.

    k is clamped to the node count (METIS answers nonsense beyond it); k = n and k = 1 skip
    METIS. Disconnected graphs are bridged first (see :func:`connected_csr`); bridges are
    taken out of the reported cut.
    """
    k = max(1, min(num_segments, num_nodes))
    if k == 1 or k == num_nodes:
        seg = np.arange(num_nodes, dtype=np.int32) if k > 1 else np.zeros(num_nodes, np.int32)
        edges = undirected_edges(edge_index, num_nodes)
        return Partition(seg, _cut(seg, edges), int(edges.shape[0]))
    csr, bridges = connected_csr(edge_index, num_nodes)
    cut, parts = metis_csr(csr, k)
    if bridges.shape[0]:
        cut -= _cut(parts, bridges)
    return Partition(dense_relabel(parts, k), cut, csr.num_edges - int(bridges.shape[0]))


METHODS: dict[str, Partitioner] = {"metis": metis_partition, "contiguous": contiguous_partition}


def segments_for(num_nodes: int, segments: int | None = None,
                 max_segment_nodes: int | None = None) -> int:
    """k from ``--segments`` or ``--max-segment-nodes`` (exactly one is given)."""
    if (segments is None) == (max_segment_nodes is None):
        raise ValueError("give exactly one of segments / max_segment_nodes")
    if segments is not None:
        return max(1, segments)
    assert max_segment_nodes is not None  # exactly one of the two is given
    return max(1, -(-num_nodes // max_segment_nodes))


def reduction(part: Partition, requested: int) -> str | None:
    """Why ``part`` has fewer segments than the ``requested`` k (None when it has them all):
    a graph of fewer nodes than k (one node per segment at most), or METIS leaving parts empty
    (contiguous parts of a small graph cannot always fill k)."""
    got = part.num_segments
    if got >= requested:
        return None
    if requested > part.num_nodes:
        return (f"{got} of {requested} segments: the graph has {part.num_nodes} nodes and a "
                "segment holds at least one")
    return (f"{got} of {requested} segments: METIS left {requested - got} parts empty "
            f"({part.num_nodes / requested:.1f} nodes per part asked, each part contiguous)")


def partition_graph(edge_index: np.ndarray, num_nodes: int, *, method: str = "metis",
                    segments: int | None = None,
                    max_segment_nodes: int | None = None) -> Partition:
    """Partition one graph; the library entry point the CLI and the baseline share."""
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r}; one of {sorted(METHODS)}")
    if num_nodes < 1:
        raise ValueError("cannot partition an empty graph")
    k = segments_for(num_nodes, segments, max_segment_nodes)
    return METHODS[method](edge_index, num_nodes, k)
