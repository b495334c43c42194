"""Where a layout config puts a node's layout against its operands': the copies XLA must insert.

On XLA:CPU a layout config is slow largely through the copies and transposes the compiler
inserts where a tensor's layout differs from the one its consumer wants (docs/baseline.md,
"The reference dataset"; the counts follow the inserted copies: bench/bench_mismatch.py).
A GNN can learn this by comparing neighbours' config embeddings, but from a few dozen
training graphs it rarely does; these two counts per configurable node and config spell it
out (``--mismatch-features``, an ablation in bench/bench_baseline_cv.py):

* ``input``: operands whose output layout differs from the layout the node's config asks for
  its input (slot 1) — each needs a copy;
* ``output``: operands whose output layout differs from the node's own output layout where
  the config set either of them (a layout changed across an elementwise-like edge).

A slot the config leaves at −1 (the compiler picks) counts as the node's default layout from
its node features. Layouts of different rank are not compared. The counts are clipped to
``MAX_COUNT`` and appended to the config slots as two more categories, so the model embeds them
like any other slot value.
"""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.baseline.features import layout_categories

MISMATCH_SLOTS = 2
DEFAULT_SLOTS = 1
SLOT_WIDTH = 6         # values per layout slot (output, input, kernel)
MAX_COUNT = 5          # counts share the slot value space (−1..6)
_OUT, _IN = slice(0, 6), slice(6, 12)


def config_positions(cfg_ids: np.ndarray, num_nodes: int) -> np.ndarray:
    """int64 [n]: each node's position in ``cfg_ids``, −1 for nodes without a config."""
    position = np.full(num_nodes, -1, np.int64)
    position[cfg_ids] = np.arange(cfg_ids.size)
    return position


def operand_pairs(edges: np.ndarray, cfg_ids: np.ndarray, num_nodes: int) -> np.ndarray:
    """int64 [P, 2]: (position in ``cfg_ids`` of a configurable consumer, node id of one of its
    direct operands). ``edges`` rows are [consumer, operand] (TpuGraphs ``edge_index``)."""
    position = config_positions(cfg_ids, num_nodes)
    if not edges.size:
        return np.zeros((0, 2), np.int64)
    consumer = position[edges[:, 0]]
    keep = consumer >= 0
    pairs = np.stack([consumer[keep], edges[keep, 1]], 1)
    return np.unique(pairs, axis=0) if pairs.size else pairs.reshape(0, 2)


class MismatchCounter:
    """Appends the two mismatch counts to one graph's layout config rows (a ConfigRows
    transform: int8 [r, nc, 18] → int8 [r, nc, 20])."""

    def __init__(self, node_feat: np.ndarray, edges: np.ndarray, cfg_ids: np.ndarray) -> None:
        n = node_feat.shape[0]
        self.default = layout_categories(node_feat)                 # int32 [n, 6]
        self.pairs = operand_pairs(edges, cfg_ids, n)
        self.cfg_ids = cfg_ids
        # −1: the operand has no config (its layout is its default)
        self.operand_position = config_positions(cfg_ids, n)[self.pairs[:, 1]]

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        r, nc = rows.shape[:2]
        extra = np.zeros((r, nc, MISMATCH_SLOTS), np.int8)
        if len(self.pairs):
            k, w = self.pairs[:, 0], self.pairs[:, 1]
            rows32 = rows.astype(np.int32)
            consumer_out = _effective(rows32[:, k, _OUT], self.default[self.cfg_ids[k]])
            operand_set = np.zeros((r, len(w), 6), np.int32) - 1
            configurable = self.operand_position >= 0
            operand_set[:, configurable] = rows32[:, self.operand_position[configurable], _OUT]
            operand_out = _effective(operand_set, self.default[w])
            wanted_in = rows32[:, k, _IN]
            in_set = (wanted_in >= 0).any(-1)
            in_differs = in_set & _differ(wanted_in, operand_out)
            touched = (rows32[:, k, _OUT] >= 0).any(-1) | (operand_set >= 0).any(-1)
            out_differs = touched & _differ(consumer_out, operand_out)
            for slot, hit in enumerate((in_differs, out_differs)):
                counts = np.zeros((r, nc), np.int64)
                np.add.at(counts.T, k, hit.T.astype(np.int64))    # per consumer, per row
                extra[..., slot] = np.minimum(counts, MAX_COUNT)
        return np.concatenate([rows.astype(np.int8), extra], -1)


def _effective(slot: np.ndarray, default: np.ndarray) -> np.ndarray:
    """The slot where the config set it, else the node's default layout."""
    unset = ~(slot >= 0).any(-1, keepdims=True)
    return np.where(unset, np.broadcast_to(default, slot.shape), slot)


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Same rank (count of entries ≥ 0), some entry different."""
    same_rank = (a >= 0).sum(-1) == (b >= 0).sum(-1)
    return same_rank & (a >= 0).any(-1) & (a != b).any(-1)


class DefaultDiff:
    """Appends, per configurable node and config, the number of its slots that differ from
    the default config's (a ConfigRows transform: int8 [r, nc, w] → [r, nc, w + 1]; the
    first 18 columns are the format's slots, any further ones are left alone)."""

    def __init__(self, default: np.ndarray | None) -> None:
        self.default = None if default is None else np.asarray(default, np.int8)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        r, nc = rows.shape[:2]
        if self.default is None or self.default.shape != (nc, 3 * SLOT_WIDTH):
            extra = np.full((r, nc, DEFAULT_SLOTS), -1, np.int8)
        else:
            slots = rows[..., :3 * SLOT_WIDTH].reshape(r, nc, 3, SLOT_WIDTH)
            base = self.default.reshape(1, nc, 3, SLOT_WIDTH)
            extra = (slots != base).any(-1).sum(-1, keepdims=True).astype(np.int8)
        return np.concatenate([rows.astype(np.int8), extra], -1)
