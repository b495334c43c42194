"""Synthetic TpuGraphs-shaped graphs with a *known* runtime function, for tests and benchmarks.

Layout runtime (ns) of config j::

    1_000 + Σ_{v configurable, not default, minor dim ≠ last dim} size_v / 8
           + Σ_{edges u→v, both configured, different minor dim} size_v / 16

so it depends on node features (``size_v``: column 28, the element count), structure (which
configurable nodes are adjacent) and the config features, times ~0.2% noise. ``num_copies``
counts the same events unweighted, as a "fewer copies is faster" heuristic would.
Config 0, the compiler default, has no penalty and so is always fastest: slowdown / top-K
metrics are trivially perfect for any ranker that puts it first; judge synthetic runs by τ/OPA.
Tile runtime: a per-graph optimum tile (from the root's shape) and a log-distance penalty.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from tpugraphs_tools.features import NUM_NODE_FEATURES
from tpugraphs_tools.format import (
    LAYOUT_CONFIG_WIDTH,
    TILE_CONFIG_WIDTH,
    collection_of,
    opcode_id,
)
from tpugraphs_tools.store import Dataset

_OTHER_OPS = ("add", "multiply", "exponential", "broadcast", "transpose", "maximum", "tanh")
_CONFIGURABLE_OPS = ("dot", "convolution", "reshape")
_F32_COLUMN = 13          # element-type one-hot for f32 (2 + index of f32)
_DIMS, _DIM_SUM, _DIM_PRODUCT, _LAYOUT = 21, 27, 28, 134


def _structure(rng: np.random.Generator, n: int, configurable_frac: float,
               cfg_ranks: tuple[int, int] = (2, 4)
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(node_feat, node_opcode, edge_index, ranks) of a random topologically ordered DAG."""
    n_params = max(1, n // 10)
    ops = np.array([opcode_id(o) for o in _OTHER_OPS], dtype=np.uint8)
    cfg_ops = np.array([opcode_id(o) for o in _CONFIGURABLE_OPS], dtype=np.uint8)
    is_cfg = rng.random(n) < configurable_frac
    is_cfg[:n_params] = False
    opcode = np.where(is_cfg, rng.choice(cfg_ops, n), rng.choice(ops, n)).astype(np.uint8)
    opcode[:n_params] = opcode_id("parameter")
    u = np.arange(n_params, n, dtype=np.int64)
    first = np.maximum(u - rng.integers(1, 9, u.size), 0)
    second_mask = rng.random(u.size) < 0.5
    second = np.maximum(u - np.minimum(rng.geometric(0.2, u.size), u), 0)
    edges = np.concatenate([np.stack([u, first], 1), np.stack([u, second], 1)[second_mask]])
    edges = np.unique(edges, axis=0) if edges.size else np.zeros((0, 2), np.int64)
    ranks = np.where(is_cfg, rng.integers(cfg_ranks[0], cfg_ranks[1] + 1, n),
                     rng.integers(1, 5, n))
    dims = np.where(np.arange(6)[None, :] < ranks[:, None], 2 ** rng.integers(2, 7, (n, 6)), 0)
    feat = np.zeros((n, NUM_NODE_FEATURES), dtype=np.float32)
    feat[:, _F32_COLUMN] = 1.0
    feat[:, _DIMS:_DIMS + 6] = dims
    feat[:, _DIM_SUM] = dims.sum(1)
    feat[:, _DIM_PRODUCT] = np.where(dims > 0, dims, 1).prod(1)
    m2m = ranks[:, None] - 1 - np.arange(6)[None, :]
    feat[:, _LAYOUT:_LAYOUT + 6] = np.where(m2m >= 0, m2m, 0)
    feat[-1, 0] = 1.0  # root
    return feat, opcode, edges, ranks


def layout_graph(seed: int, num_nodes: int, num_configs: int, configurable_frac: float = 0.25,
                 cfg_ranks: tuple[int, int] = (2, 4)) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """TpuGraphs layout arrays + ``num_copies`` per config; config 0 is the compiler default.

    ``cfg_ranks``: rank range of configurable nodes ((2, 2) = matrices only, an easier task).
    """
    rng = np.random.default_rng(seed)
    feat, opcode, edges, ranks = _structure(rng, num_nodes, configurable_frac, cfg_ranks)
    cfg_ids = np.nonzero(np.isin(opcode, [opcode_id(o) for o in _CONFIGURABLE_OPS]))[0]
    nc, c = cfg_ids.size, num_configs
    r = ranks[cfg_ids]
    keys = np.where(np.arange(6)[None, None, :] < r[None, :, None], rng.random((c, nc, 6)), 2.0)
    perm = np.argsort(keys, axis=-1).astype(np.float32)
    perm = np.where(np.arange(6)[None, None, :] < r[None, :, None], perm, -1.0)
    default = rng.random((c, nc)) < 0.25
    default[0] = True
    perm[default] = -1.0
    config_feat = np.full((c, nc, LAYOUT_CONFIG_WIDTH), -1.0, dtype=np.float32)
    config_feat[:, :, :6] = perm
    size = feat[cfg_ids, _DIM_PRODUCT].astype(np.float64)
    bad = (~default) & (perm[:, :, 0] != (r - 1)[None, :])
    col = np.full(num_nodes, -1)
    col[cfg_ids] = np.arange(nc)
    both = (col[edges[:, 0]] >= 0) & (col[edges[:, 1]] >= 0) if edges.size else np.zeros(0, bool)
    cu, cv = col[edges[both, 0]], col[edges[both, 1]]
    mismatch = (~default[:, cu]) & (~default[:, cv]) & (perm[:, cu, 0] != perm[:, cv, 0])
    cost = 1_000 + (bad * size).sum(1) / 8 + (mismatch * size[cv]).sum(1) / 16
    runtime = cost * (1 + 0.002 * rng.standard_normal(c))
    num_copies = bad.sum(1) + mismatch.sum(1)
    arrays = {
        "node_feat": feat, "node_opcode": opcode, "edge_index": edges,
        "node_config_ids": cfg_ids.astype(np.int64),
        "node_splits": np.array([0, num_nodes], dtype=np.int64),
        "node_config_feat": config_feat, "config_runtime": np.round(runtime).astype(np.int64),
    }
    return arrays, num_copies.astype(np.int64)


def tile_graph(seed: int, num_nodes: int, num_configs: int) -> dict[str, np.ndarray]:
    """TpuGraphs tile arrays; config 0 (tile 8x8) is the default every runtime is normalised by."""
    rng = np.random.default_rng(seed)
    feat, opcode, edges, _ = _structure(rng, num_nodes, 0.1)
    best = 2.0 ** rng.integers(1, 7, 2)
    tiles = 2.0 ** rng.integers(0, 8, (num_configs, 2))
    tiles[0] = 8.0
    config_feat = np.zeros((num_configs, TILE_CONFIG_WIDTH), dtype=np.float32)
    config_feat[:, 8:10] = tiles
    config_feat[:, 14] = tiles.sum(1)
    config_feat[:, 15] = tiles.prod(1)
    base = 1_000 + feat[:, _DIM_PRODUCT].sum() / 64
    penalty = np.abs(np.log2(tiles) - np.log2(best)[None, :]).sum(1)
    runtime = base * (1 + 0.3 * penalty) * (1 + 0.005 * rng.standard_normal(num_configs))
    runtime = np.round(runtime).astype(np.int64)
    return {"node_feat": feat, "node_opcode": opcode, "edge_index": edges,
            "node_config_ids": np.zeros(0, np.int64),
            "node_splits": np.array([0, num_nodes], dtype=np.int64),
            "config_feat": config_feat, "config_runtime": runtime,
            "config_runtime_normalizers": np.full(num_configs, runtime[0], dtype=np.int64)}


def _paired_label(runtime: np.ndarray, j: int, half: float | None) -> dict[str, float]:
    if half is None:
        return {}
    ratio = float(runtime[j] / runtime[0])
    spread = 0.0 if j == 0 else half
    return {"relative_to_default": ratio, "relative_ci_low": ratio * (1 - spread),
            "relative_ci_high": ratio * (1 + spread)}


def write_synthetic_dataset(root: str | Path, *, programs: int = 4, graphs_per_program: int = 3,
                            nodes: tuple[int, int] = (40, 80), configs: int = 24,
                            collection: str = "layout", seed: int = 0,
                            with_splits: bool = False, with_copies: bool = True,
                            cfg_ranks: tuple[int, int] = (2, 4),
                            label_ci: float | None = None) -> Dataset:
    """A small tgt dataset through the store API (null splits unless ``with_splits``).
    ``label_ci``: rows carry paired-timing labels (ratio to config 0) with a 95% CI of
    ± that fraction."""
    ds = Dataset.open(root, create=True)
    rng = np.random.default_rng(seed)
    split_of = ("train", "valid", "test")
    with ds.transaction() as tx:
        for p in range(programs):
            for g in range(graphs_per_program):
                gseed = int(rng.integers(1 << 31))
                n = int(rng.integers(nodes[0], nodes[1] + 1))
                copies = None
                if collection_of(collection).per_node_configs:
                    arrays, copies = layout_graph(gseed, n, configs, cfg_ranks=cfg_ranks)
                else:
                    arrays = tile_graph(gseed, n, configs)
                fingerprint = hashlib.sha256(f"{seed}-{p}-{g}".encode()).hexdigest()
                graph_id = f"synthetic-p{p}-g{g}.{fingerprint[:12]}"
                row = {
                    "graph_id": graph_id, "collection": collection, "program": f"synthetic-p{p}",
                    "program_args": json.dumps({"seed": gseed, "nodes": n}), "source": "jax",
                    "hlo_stage": "unoptimized", "fingerprint": fingerprint,
                    "backend": "synthetic", "num_nodes": n,
                    "num_edges": int(arrays["edge_index"].shape[0]),
                    "num_configurable": int(arrays["node_config_ids"].shape[0]),
                    "num_configs": configs,
                    "split": split_of[p % 3] if with_splits else None,
                }
                tx.put_graph(row, arrays)
                runtime = arrays["config_runtime"]
                tx.put_configs(graph_id, [
                    {"config_index": j, "strategy": "synthetic", "is_default": j == 0,
                     "status": "ok", "config": json.dumps({"synthetic": j}), "npz_row": j,
                     "num_copies": int(copies[j]) if with_copies and copies is not None
                     else None,
                     "runtime_min_ns": int(runtime[j]), **_paired_label(runtime, j, label_ci)}
                    for j in range(configs)])
    return ds
