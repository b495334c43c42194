"""Partition methods on hand-made graphs: edge cases, contiguity, cut and balance."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from tpugraphs_tools.partition import (
    connected_csr,
    contiguous_partition,
    dense_relabel,
    metis_partition,
    partition_graph,
    segments_for,
    undirected_csr,
    undirected_edges,
)


def chain(n: int) -> np.ndarray:
    """Edges [u, u-1]: u consumes its predecessor (TpuGraphs direction)."""
    u = np.arange(1, n)
    return np.stack([u, u - 1], axis=1)


def random_dag(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u = np.repeat(np.arange(1, n), 2)
    v = u - np.minimum(rng.geometric(0.1, u.size), u)
    return np.unique(np.stack([u, v], 1), axis=0)


def test_csr_is_symmetric_simple_graph() -> None:
    edges = np.array([[1, 0], [0, 1], [2, 2], [2, 0], [2, 0], [3, 1]])
    csr = undirected_csr(edges, 5)
    a = sp.csr_matrix((np.ones(csr.indices.size), csr.indices, csr.indptr), shape=(5, 5))
    assert (a != a.T).nnz == 0
    assert a.diagonal().sum() == 0
    assert a.max() == 1  # duplicates merged
    assert csr.num_edges == 3
    assert undirected_edges(edges, 5).tolist() == [[0, 1], [0, 2], [1, 3]]


def test_contiguous_ranges_and_cut() -> None:
    part = contiguous_partition(chain(10), 10, 3)
    assert part.node_segment.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert part.edge_cut == 2  # 3-4 and 6-7
    assert part.num_edges == 9
    assert part.sizes.tolist() == [4, 3, 3]
    assert part.balance == pytest.approx(4 / (10 / 3))


@pytest.mark.parametrize("method", ["metis", "contiguous"])
def test_k_larger_than_n_and_single_node(method: str) -> None:
    part = partition_graph(chain(5), 5, method=method, segments=64)
    assert part.num_segments == 5
    assert sorted(part.node_segment.tolist()) == [0, 1, 2, 3, 4]
    assert part.edge_cut == 4
    one = partition_graph(np.zeros((0, 2), np.int64), 1, method=method, segments=64)
    assert one.node_segment.tolist() == [0]
    assert one.edge_cut == 0 and one.balance == 1.0
    assert one.node_segment.dtype == np.int32


def test_metis_disconnected_graph() -> None:
    # three components (0-2, 3-5, 6-9) plus isolated node 10
    edges = np.array([[1, 0], [2, 1], [4, 3], [5, 4], [7, 6], [8, 7], [9, 8]])
    csr, bridges = connected_csr(edges, 11)
    assert bridges.shape == (3, 2)
    count, _ = connected_components(
        sp.csr_matrix((np.ones(csr.indices.size), csr.indices, csr.indptr), shape=(11, 11)))
    assert count == 1
    part = metis_partition(edges, 11, 3)
    assert part.num_segments == 3
    seg = part.node_segment
    real_cut = int(np.count_nonzero(seg[edges[:, 0]] != seg[edges[:, 1]]))
    assert part.edge_cut == real_cut  # bridges are not counted
    assert part.num_edges == 7


def test_metis_segments_are_contiguous_and_balanced() -> None:
    n = 5000
    edges = random_dag(n)
    part = partition_graph(edges, n, segments=16)
    assert part.num_segments == 16
    assert part.balance < 1.1
    seg = part.node_segment
    # dense ids ordered by their lowest node: node 0 is in segment 0, first appearances rise
    first = [int(np.argmax(seg == s)) for s in range(16)]
    assert first == sorted(first) and first[0] == 0
    a = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    for s in range(16):
        nodes = np.nonzero(seg == s)[0]
        count, _ = connected_components(a[nodes][:, nodes], directed=True, connection="weak")
        assert count == 1
    cut = int(np.count_nonzero(seg[edges[:, 0]] != seg[edges[:, 1]]))
    assert part.edge_cut == cut
    assert cut < 0.1 * len(edges)


def test_max_segment_nodes_and_relabel() -> None:
    assert segments_for(1000, max_segment_nodes=300) == 4
    assert segments_for(5, segments=64) == 64
    with pytest.raises(ValueError):
        segments_for(5)
    part = partition_graph(chain(1000), 1000, method="contiguous", max_segment_nodes=300)
    assert part.sizes.max() <= 300 and part.num_segments == 4
    assert dense_relabel(np.array([5, 5, 2, 7, 2]), 8).tolist() == [0, 0, 1, 2, 1]
    with pytest.raises(ValueError):
        partition_graph(chain(3), 3, method="nope", segments=2)
