"""``gbdt``: gradient-boosted trees on config features plus a graph summary, no graph structure.

What a learned ranker reaches without message passing: per config, the share of configurable
nodes holding each layout value in each slot position (layout) or the tile features on a
log scale (tile), the count of non-default slots when the default is known; per graph, its
size and opcode mix. Trained on the training graphs to predict the log runtime relative to
the graph's mean, so graphs of any speed share one target. The GNN must beat this to show
that it uses the graph. LightGBM is an optional extra (``pip install
'tpugraphs-tools[trees]'``); without it the ranker is skipped with a note.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpugraphs_tools.baseline.configstore import LAYOUT_MAX, LAYOUT_MIN
from tpugraphs_tools.baseline.prepare import PreparedGraph
from tpugraphs_tools.baseline.trivial import (
    SLOT_WIDTH,
    non_default_slots,
    raw_config_feat,
    signed_log,
)
from tpugraphs_tools.format import LAYOUT_CONFIG_WIDTH, OPCODE_IDS

NAME = "gbdt"
MISSING = ("gbdt ranker skipped: lightgbm is not installed "
           "(pip install 'tpugraphs-tools[trees]')")
NUM_OPCODES = max(OPCODE_IDS.values()) + 1
MAX_ROWS_PER_GRAPH = 500      # training configs per graph (seeded sample beyond)
ROUNDS = 200
PARAMS: dict[str, Any] = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 15,
                          "min_data_in_leaf": 5, "bagging_fraction": 0.8, "bagging_freq": 1,
                          "feature_fraction": 0.8, "num_threads": 1, "verbose": -1,
                          "deterministic": True, "force_row_wise": True}


def lightgbm() -> Any | None:
    """The lightgbm module, or None when the optional extra is not installed."""
    try:
        import lightgbm as lgb
    except ImportError:
        return None
    return lgb


def graph_features(g: PreparedGraph) -> np.ndarray:
    """float [2 + NUM_OPCODES]: log node count, log configurable nodes, opcode shares."""
    opcode = np.clip(np.asarray(g.opcode, np.int64), 0, NUM_OPCODES - 1)
    shares = np.bincount(opcode, minlength=NUM_OPCODES) / max(1, opcode.size)
    return np.concatenate([[np.log1p(g.num_nodes), np.log1p(np.asarray(g.cfg_ids).size)],
                           shares])


def config_features(g: PreparedGraph, default: np.ndarray | None) -> np.ndarray:
    """float [c, F] per config of the view (F fixed per kind; NaN where unknown)."""
    if g.info.spec.per_node_configs:
        # the 18 format slots only: derived slots (--mismatch-features) read the graph
        feat = g.cfg_feat.read()[..., :LAYOUT_CONFIG_WIDTH]    # int8 [c, nc, 18]
        c, nc, width = feat.shape
        values = np.arange(LAYOUT_MIN, LAYOUT_MAX + 1)
        counts = np.stack([(feat == v).mean(axis=1) if nc else np.zeros((c, width))
                           for v in values], axis=-1)       # [c, 18, values]
        slots = width // SLOT_WIDTH
        if default is not None and np.shape(default) == (nc, width):
            per_slot = np.stack([non_default_slots(feat[:, :, s * SLOT_WIDTH:(s + 1) * SLOT_WIDTH],
                                                   default[:, s * SLOT_WIDTH:(s + 1) * SLOT_WIDTH])
                                 for s in range(slots)], axis=1).astype(np.float64)
        else:
            per_slot = np.full((c, slots), np.nan)
        return np.concatenate([counts.reshape(c, -1), per_slot], axis=1)
    feat = raw_config_feat(g)
    distance = (np.abs(signed_log(feat) - signed_log(default)[None, :]).sum(axis=1)
                if default is not None and np.shape(default) == feat.shape[1:]
                else np.full(feat.shape[0], np.nan))
    return np.concatenate([signed_log(feat), distance[:, None]], axis=1)


def features(g: PreparedGraph, default: np.ndarray | None, rows: np.ndarray | None = None
             ) -> np.ndarray:
    """Config features (``rows`` of the view, all when None) beside the graph's summary."""
    configs = config_features(g, default)
    if rows is not None:
        configs = configs[rows]
    summary = np.broadcast_to(graph_features(g), (configs.shape[0], 2 + NUM_OPCODES))
    return np.concatenate([configs, summary], axis=1)


def target(runtime: np.ndarray) -> np.ndarray:
    """log runtime minus the graph's mean log runtime (only the order within a graph counts)."""
    log = np.log(np.maximum(np.asarray(runtime, np.float64), 1e-12))
    return log - log.mean()


class TreeRanker:
    """A LightGBM booster fitted on the training graphs' configs (squared error on the
    centred log runtime)."""

    def __init__(self, model: Any, defaults: dict[str, np.ndarray]) -> None:
        self.model, self.defaults = model, defaults

    @classmethod
    def fit(cls, train: list[PreparedGraph], defaults: dict[str, np.ndarray], seed: int
            ) -> TreeRanker | None:
        """None when lightgbm is missing or no training graph has two configs."""
        lgb = lightgbm()
        if lgb is None:
            return None
        rng = np.random.default_rng(seed)
        xs, ys = [], []
        for g in train:
            count = g.num_configs
            if count < 2:
                continue
            rows = np.sort(rng.choice(count, MAX_ROWS_PER_GRAPH, replace=False)) \
                if count > MAX_ROWS_PER_GRAPH else None
            xs.append(features(g, defaults.get(g.info.graph_id), rows))
            runtime = g.runtime.read()
            ys.append(target(runtime if rows is None else runtime[rows]))
        if not xs:
            return None
        data = lgb.Dataset(np.concatenate(xs), np.concatenate(ys))
        model = lgb.train({**PARAMS, "seed": seed}, data, num_boost_round=ROUNDS)
        return cls(model, defaults)

    def predict(self, g: PreparedGraph) -> np.ndarray:
        """Predicted cost per config of the view (lower = predicted faster)."""
        return np.asarray(self.model.predict(features(g, self.defaults.get(g.info.graph_id))),
                          np.float64)
