"""Undirected CSR adjacency for METIS, built with scipy in O(n + m) (no networkx, no sort).

METIS wants both directions of every edge, no self-loops and no duplicates. TpuGraphs edges are
directed (``[u, v]``: u consumes v) and the featurizer's may repeat once reversed, so the
adjacency is ``A + Aᵀ`` of a 0/1 matrix whose duplicate entries scipy sums away.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class Csr:
    """Symmetric adjacency: node i's neighbours are ``indices[indptr[i]:indptr[i+1]]``."""

    indptr: np.ndarray   # int64 [n + 1]
    indices: np.ndarray  # int64 [2 * num_edges]

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        """Undirected edges (each stored twice)."""
        return int(self.indices.shape[0] // 2)


def _directed(edge_index: np.ndarray, num_nodes: int) -> sp.csr_matrix:
    edges = np.asarray(edge_index).reshape(-1, 2)
    u, v = edges[:, 0], edges[:, 1]
    loops = u == v
    if loops.any():
        u, v = u[~loops], v[~loops]
    ones = np.ones(u.shape[0], dtype=np.int8)
    return sp.csr_matrix((ones, (u, v)), shape=(num_nodes, num_nodes))


def _symmetric(a: sp.csr_matrix) -> Csr:
    s = (a + a.T).tocsr()
    return Csr(s.indptr.astype(np.int64, copy=False), s.indices.astype(np.int64, copy=False))


def undirected_csr(edge_index: np.ndarray, num_nodes: int) -> Csr:
    """The undirected simple graph of ``edge_index`` as CSR."""
    return _symmetric(_directed(edge_index, num_nodes))


def connected_csr(edge_index: np.ndarray, num_nodes: int) -> tuple[Csr, np.ndarray]:
    """CSR made connected by chaining components, plus the added bridge edges ``[b, 2]``.

    METIS refuses contiguous partitions of disconnected graphs, and HLO graphs are often
    disconnected (unused parameters, dead constants). One bridge between consecutive
    components (by lowest node id) keeps the cut change at most ``#components − 1`` edges.
    """
    a = _directed(edge_index, num_nodes)
    count, labels = connected_components(a, directed=True, connection="weak")
    if count <= 1:
        return _symmetric(a), np.zeros((0, 2), dtype=np.int64)
    first = np.full(count, num_nodes, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(num_nodes, dtype=np.int64))
    reps = np.sort(first)
    bridges = np.stack([reps[1:], reps[:-1]], axis=1)
    ones = np.ones(bridges.shape[0], dtype=np.int8)
    b = sp.csr_matrix((ones, (bridges[:, 0], bridges[:, 1])), shape=a.shape)
    return _symmetric((a + b).tocsr()), bridges


def undirected_edges(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Unique undirected edges ``[m, 2]`` (low id first), self-loops dropped (via the CSR:
    linear time, where ``np.unique`` on edge keys would sort)."""
    csr = undirected_csr(edge_index, num_nodes)
    rows = np.repeat(np.arange(num_nodes, dtype=np.int64), np.diff(csr.indptr))
    upper = rows < csr.indices
    return np.stack([rows[upper], csr.indices[upper]], axis=1)
