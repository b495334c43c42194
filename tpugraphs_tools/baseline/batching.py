"""Packing segments of several graphs into one padded batch with bucketed shapes.

Every array dimension is rounded up to a power of two (with a floor), so a run compiles one
training step per bucket combination instead of one per graph (``tests/baseline`` counts
compilations). Padding points at a dummy node / segment / graph slot and carries mask 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.stats import rankdata

from tpugraphs_tools.baseline.prepare import PreparedGraph
from tpugraphs_tools.format import LAYOUT_CONFIG_WIDTH

LAYOUT_SLOTS = LAYOUT_CONFIG_WIDTH


def bucket(size: int, floor: int) -> int:
    """Smallest power of two ≥ size, at least ``floor``."""
    return max(floor, 1 << max(0, int(size) - 1).bit_length())


class Batch(NamedTuple):
    """Padded arrays of K segments from B graphs, each with C configs (a jax pytree)."""

    opcode: np.ndarray      # int32 [N]
    feat: np.ndarray        # float32 [N, F]
    extra: np.ndarray       # float32 [N, E]
    layout_cat: np.ndarray  # int32 [N, 6] or [N, 0]
    node_seg: np.ndarray    # int32 [N] segment slot; padding → S
    node_mask: np.ndarray   # float32 [N]
    senders: np.ndarray     # int32 [M] operand v of edge [u, v] (u consumes v)
    receivers: np.ndarray   # int32 [M] consumer u: data flows senders → receivers (jraph's)
    edge_mask: np.ndarray   # float32 [M]
    w_in: np.ndarray        # float32 [N] 1 / #operands (edges received)
    w_out: np.ndarray       # float32 [N] 1 / #users (edges sent)
    gcn_edge: np.ndarray    # float32 [M] 1/sqrt(d_u d_v) of A + Aᵀ + I
    gcn_self: np.ndarray    # float32 [N] 1/d
    cfg_node: np.ndarray    # int32 [K] configurable node index; padding → N - 1
    cfg_mask: np.ndarray    # float32 [K]
    cfg_feat: np.ndarray    # int32 [K, C, LAYOUT_SLOTS] layout values −1..6 (tile: zeros)
    seg_graph: np.ndarray   # int32 [S] graph slot; padding → B
    seg_mask: np.ndarray    # float32 [S]
    graph_cfg: np.ndarray   # float32 [B, C, Ft] tile config features (layout: Ft = 0)
    target: np.ndarray      # float32 [B, C] runtime rank within the graph (ties equal)
    valid: np.ndarray       # float32 [B, C]
    bounds: np.ndarray      # float32 [B, C, 2] label CI on the log-runtime scale (losses.py)


class Stale(NamedTuple):
    """Historical segment embeddings entering a step as constants (GST)."""

    emb: np.ndarray         # float32 [S2, Cn, D]
    graph: np.ndarray       # int32 [S2] graph slot; padding → B
    mask: np.ndarray        # float32 [S2]


@dataclass(frozen=True)
class Item:
    """One graph of a batch: which segments to run, on which configs."""

    graph: PreparedGraph
    segments: tuple[int, ...]
    configs: np.ndarray     # npz config rows (≤ C)


def empty_stale(batch_graphs: int, cn: int, dim: int) -> Stale:
    return Stale(np.zeros((1, cn, dim), np.float32), np.full(1, batch_graphs, np.int32),
                 np.zeros(1, np.float32))


def config_slots(g: PreparedGraph) -> int:
    """Values per configurable node and config: the 18 layout slots, plus any derived slots
    (``--mismatch-features``); tile batches carry a placeholder of the plain width."""
    return int(g.cfg_feat.shape[-1]) if g.info.spec.per_node_configs else LAYOUT_SLOTS


def log_bounds(runtime: np.ndarray, factor: np.ndarray | None) -> np.ndarray:
    """float32 [r, 2]: label CIs (``factor`` [r, 2], CI / label, NaN unknown) as log
    runtimes; the label itself where the CI is unknown."""
    log = np.log(np.maximum(np.asarray(runtime, np.float64), 1e-30))
    out = np.stack([log, log], axis=-1)
    if factor is not None:
        factor = np.asarray(factor, np.float64)
        known = np.isfinite(factor).all(axis=-1) & (factor > 0).all(axis=-1)
        out[known] += np.log(factor[known])
    return out.astype(np.float32)


def config_arrays(items: list[Item], *, batch_graphs: int, configs: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(graph_cfg [B, C, Ft], target [B, C], valid [B, C], bounds [B, C, 2]) of ``items``."""
    g0 = items[0].graph
    ft = 0 if g0.info.spec.per_node_configs else g0.cfg_feat.shape[1]
    graph_cfg = np.zeros((batch_graphs, configs, ft), np.float32)
    target = np.zeros((batch_graphs, configs), np.float32)
    valid = np.zeros((batch_graphs, configs), np.float32)
    bounds = np.zeros((batch_graphs, configs, 2), np.float32)
    for slot, it in enumerate(items):
        cc, g = it.configs.size, it.graph
        runtime = g.runtime[it.configs]
        target[slot, :cc] = rankdata(runtime, method="min")
        valid[slot, :cc] = 1.0
        ci = g.label_ci[it.configs] if g.label_ci is not None else None
        bounds[slot, :cc] = log_bounds(runtime, ci)
        if ft:
            graph_cfg[slot, :cc] = it.graph.cfg_feat[it.configs]
    return graph_cfg, target, valid, bounds


def pack(items: list[Item], *, batch_graphs: int, configs: int) -> Batch:
    """Pack ``items`` (≤ batch_graphs) into one padded :class:`Batch`."""
    assert items and len(items) <= batch_graphs
    g0 = items[0].graph
    per_node = g0.info.spec.per_node_configs
    segs = [(slot, it, it.graph.segments[s]) for slot, it in enumerate(items) for s in it.segments]
    # the sampled configs' rows, read once per graph (lazily from the cache: configstore.py)
    rows = [it.graph.cfg_feat[it.configs] if per_node else np.zeros(0, np.int8)
            for it in items]
    n_real = sum(s.nodes.size for _, _, s in segs)
    m_real = sum(s.edges.shape[0] for _, _, s in segs)
    k_real = sum(s.cfg_pos.size for _, _, s in segs) if per_node else 0
    N, M = bucket(n_real + 1, 64), bucket(m_real, 64)
    K, S = bucket(k_real + 1, 8), bucket(len(segs), 1)
    B, C = batch_graphs, configs
    F, E, L = g0.feat.shape[1], g0.extra.shape[1], g0.layout_cat.shape[1]
    opcode = np.zeros(N, np.int32)
    feat = np.zeros((N, F), np.float32)
    extra = np.zeros((N, E), np.float32)
    layout_cat = np.full((N, L), -1, np.int32)
    node_seg = np.full(N, S, np.int32)
    senders = np.full(M, N - 1, np.int32)
    receivers = np.full(M, N - 1, np.int32)
    cfg_node = np.full(K, N - 1, np.int32)
    cfg_feat = np.full((K, C if per_node else 1, config_slots(g0)), -1, np.int32)
    seg_graph = np.full(S, B, np.int32)
    n = m = k = 0
    for i, (slot, it, seg) in enumerate(segs):
        g, ns, ms = it.graph, seg.nodes.size, seg.edges.shape[0]
        opcode[n:n + ns] = g.opcode[seg.nodes]
        feat[n:n + ns] = g.feat[seg.nodes]
        extra[n:n + ns] = g.extra[seg.nodes]
        layout_cat[n:n + ns] = g.layout_cat[seg.nodes]
        node_seg[n:n + ns] = i
        senders[m:m + ms] = seg.edges[:, 1] + n
        receivers[m:m + ms] = seg.edges[:, 0] + n
        if per_node and seg.cfg_pos.size:
            ks, cc = seg.cfg_pos.size, it.configs.size
            cfg_node[k:k + ks] = seg.cfg_local + n
            values = rows[slot][:, seg.cfg_pos]                      # [cc, ks, slots]
            cfg_feat[k:k + ks, :cc] = values.transpose(1, 0, 2)
            k += ks
        seg_graph[i] = slot
        n, m = n + ns, m + ms
    node_mask = (np.arange(N) < n).astype(np.float32)
    edge_mask = (np.arange(M) < m).astype(np.float32)
    indeg = np.bincount(receivers[:m], minlength=N).astype(np.float32)
    outdeg = np.bincount(senders[:m], minlength=N).astype(np.float32)
    deg = indeg + outdeg + 1.0
    graph_cfg, target, valid, bounds = config_arrays(items, batch_graphs=B, configs=C)
    return Batch(
        opcode, feat, extra, layout_cat, node_seg, node_mask, senders, receivers, edge_mask,
        1.0 / np.maximum(indeg, 1.0), 1.0 / np.maximum(outdeg, 1.0),
        (1.0 / np.sqrt(deg[senders] * deg[receivers]) * edge_mask).astype(np.float32),
        (1.0 / deg).astype(np.float32), cfg_node, (np.arange(K) < k).astype(np.float32),
        cfg_feat, seg_graph, (np.arange(S) < len(segs)).astype(np.float32), graph_cfg,
        target, valid, bounds)


def dummy_batch(g: PreparedGraph, *, batch_graphs: int, configs: int) -> Batch:
    """A fixed-shape batch with ``g``'s feature widths: parameter init that does not depend
    on any graph's size, so every run with the same widths reuses one compiled init."""
    n, m, k = 64, 64, 8
    per_node = g.info.spec.per_node_configs
    ft = 0 if per_node else g.cfg_feat.shape[1]
    z = np.zeros
    return Batch(
        z(n, np.int32), z((n, g.feat.shape[1]), np.float32), z((n, g.extra.shape[1]), np.float32),
        np.full((n, g.layout_cat.shape[1]), -1, np.int32), z(n, np.int32), np.ones(n, np.float32),
        z(m, np.int32), z(m, np.int32), z(m, np.float32), np.ones(n, np.float32),
        np.ones(n, np.float32), z(m, np.float32), np.ones(n, np.float32), z(k, np.int32),
        z(k, np.float32), np.full((k, configs if per_node else 1, config_slots(g)), -1,
                                  np.int32),
        z(1, np.int32), np.ones(1, np.float32), z((batch_graphs, configs, ft), np.float32),
        z((batch_graphs, configs), np.float32), np.ones((batch_graphs, configs), np.float32),
        z((batch_graphs, configs, 2), np.float32))
