"""Node/config feature preprocessing: normalisation from train statistics, pruning, −1 padding.

Heavy-tailed TpuGraphs columns (shape products, sizes) are squashed with ``sign·log1p|x|``
before min-max scaling (Kaggle 2nd/3rd place); columns constant over the train graphs are
dropped (tpu_graphs baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpugraphs_tools.format import CONFIGURABLE_IDS, NODE_FEATURE_WIDTH

DIMS_COLUMNS = slice(21, 27)      # shape dims 0..5
# minor_to_major 0..5, the last six node features (0-padded in TpuGraphs)
LAYOUT_COLUMNS = slice(NODE_FEATURE_WIDTH - 6, NODE_FEATURE_WIDTH)


def signed_log(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.log1p(np.abs(x))).astype(np.float32)


@dataclass
class Normalizer:
    """Min-max scaling of ``signed_log(x)`` fitted on train rows; constant columns dropped."""

    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def empty(cls, width: int) -> Normalizer:
        return cls(np.full(width, np.inf, np.float32), np.full(width, -np.inf, np.float32))

    def update(self, x: np.ndarray) -> None:
        """Fold in one train graph's rows (streaming: graphs need not all be in memory)."""
        if x.shape[0]:
            t = signed_log(x)
            self.lo = np.minimum(self.lo, t.min(0))
            self.hi = np.maximum(self.hi, t.max(0))

    @property
    def keep(self) -> np.ndarray:
        return self.hi > self.lo

    @property
    def width(self) -> int:
        return int(self.keep.sum())

    def __call__(self, x: np.ndarray) -> np.ndarray:
        keep = self.keep
        t = signed_log(x[:, keep])
        return ((t - self.lo[keep]) / (self.hi[keep] - self.lo[keep])).astype(np.float32)


def layout_categories(node_feat: np.ndarray) -> np.ndarray:
    """Node layout ``minor_to_major`` with −1 beyond the rank (Kaggle 1st: one value space
    for node layouts and config layouts, so both share an embedding). int32 [n, 6]."""
    rank = (node_feat[:, DIMS_COLUMNS] > 0).sum(1)
    m2m = node_feat[:, LAYOUT_COLUMNS].astype(np.int32)
    return np.where(np.arange(6)[None, :] < rank[:, None], m2m, -1).astype(np.int32)


def prune_nodes(node_opcode: np.ndarray, edge_index: np.ndarray,
                node_config_ids: np.ndarray) -> np.ndarray:
    """Sorted ids of configurable nodes and their direct neighbours (Kaggle 1st place).

    Graphs without configurable nodes (tile kernels) are kept whole.
    """
    n = node_opcode.shape[0]
    cfg = np.zeros(n, dtype=bool)
    cfg[node_config_ids] = True
    if not cfg.any():
        cfg[np.isin(node_opcode, list(CONFIGURABLE_IDS))] = True
    if not cfg.any():
        return np.arange(n)
    keep = cfg.copy()
    if edge_index.size:
        u, v = edge_index[:, 0], edge_index[:, 1]
        keep[v[cfg[u]]] = True
        keep[u[cfg[v]]] = True
    return np.nonzero(keep)[0]


def induced(edge_index: np.ndarray, kept: np.ndarray, num_nodes: int) -> np.ndarray:
    """Edges among ``kept`` nodes, renumbered to positions in ``kept``."""
    index = np.full(num_nodes, -1, dtype=np.int64)
    index[kept] = np.arange(kept.size)
    if not edge_index.size:
        return np.zeros((0, 2), np.int64)
    e = index[edge_index]
    return e[(e >= 0).all(1)]
