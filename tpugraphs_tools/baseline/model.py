"""The reference cost model (flax.linen): node encoder → GNN → segment readout → head.

Node states are ``[N, Cn, H]``: one copy of the graph per config for the layout collection
(config features change the configurable nodes' inputs, Cn = C) and a single copy for tiles
(configs enter at the head, Cn = 1). A *segment* embedding is the readout of one segment; a
graph embedding is the mean of its segments' embeddings (fresh or historical, see ``gst.py``),
so full-graph training is the one-segment case of the same model.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from tpugraphs_tools.baseline.batching import Batch, Stale
from tpugraphs_tools.baseline.options import LAYERS, BaselineOptions
from tpugraphs_tools.format import OPCODE_NAMES, collection_of
from tpugraphs_tools.option_info import default_of

NUM_VALUES = 8  # layout values −1..6 → 0..7
# A Batch/Stale field: a host array, a tracer once the step is jitted.
Arr = jax.Array | np.ndarray


@dataclass(frozen=True)
class ModelConfig:
    """What builds one model (saved in its sidecar, ``"model"``); the defaults are
    :class:`BaselineOptions`'."""

    kind: str = "layout"                  # "layout" | "tile"
    layer: str = default_of(BaselineOptions, "layer")       # options.LAYERS: sage | gcn
    hidden: int = default_of(BaselineOptions, "hidden")
    layers: int = default_of(BaselineOptions, "layers")
    opcode_dim: int = 32
    value_dim: int = 8
    cross_config_attention: bool = default_of(BaselineOptions, "cross_config_attention")

    def __post_init__(self) -> None:
        # A sidecar's "model" section is read into this record: a layer it does not know
        # would otherwise build a GCN without a word (saved.py names the key on this error).
        if self.layer not in LAYERS:
            raise ValueError(f"layer must be one of {LAYERS}, got {self.layer!r}")


def _segment_sum(x: Arr, ids: Arr, n: int) -> jax.Array:
    return jax.ops.segment_sum(x, ids, num_segments=n)


class SageLayer(nn.Module):
    """GraphSAGE with separate mean aggregations over operands and users, residual."""

    hidden: int

    @nn.compact
    def __call__(self, h: jax.Array, b: Batch) -> jax.Array:
        n = h.shape[0]
        x = nn.LayerNorm()(h)
        em = b.edge_mask[:, None, None]
        agg_in = _segment_sum(x[b.senders] * em, b.receivers, n) * b.w_in[:, None, None]
        agg_out = _segment_sum(x[b.receivers] * em, b.senders, n) * b.w_out[:, None, None]
        y = nn.Dense(self.hidden)(jnp.concatenate([x, agg_in, agg_out], -1))
        return h + nn.Dense(self.hidden)(nn.gelu(y))


class GcnLayer(nn.Module):
    """GCN over the symmetric normalised A + Aᵀ + I (tpu_graphs ResModel), residual."""

    hidden: int

    @nn.compact
    def __call__(self, h: jax.Array, b: Batch) -> jax.Array:
        n = h.shape[0]
        x = nn.Dense(self.hidden)(nn.LayerNorm()(h))
        w = b.gcn_edge[:, None, None]
        agg = (_segment_sum(x[b.senders] * w, b.receivers, n)
               + _segment_sum(x[b.receivers] * w, b.senders, n)
               + x * b.gcn_self[:, None, None])
        return h + nn.Dense(self.hidden)(nn.gelu(agg))


class SegmentEncoder(nn.Module):
    """Batch → segment embeddings ``[S, Cn, H]`` (mean ⊕ max ⊕ configurable-node mean)."""

    cfg: ModelConfig

    @nn.compact
    def __call__(self, b: Batch, values: nn.Embed) -> jax.Array:
        c = self.cfg
        n, s = b.opcode.shape[0], b.seg_mask.shape[0]
        parts = [nn.Embed(len(OPCODE_NAMES), c.opcode_dim)(b.opcode), b.feat, b.extra]
        if b.layout_cat.shape[1]:
            parts.append(values(b.layout_cat + 1).reshape(n, -1))
        x = nn.Dense(c.hidden)(jnp.concatenate(parts, -1))
        x = nn.Dense(c.hidden)(nn.gelu(x))[:, None, :]                     # [N, 1, H]
        if collection_of(c.kind).per_node_configs:
            cn = b.cfg_feat.shape[1]
            emb = values(jnp.clip(b.cfg_feat, -1, NUM_VALUES - 2) + 1)    # [K, C, slots, V]
            emb = nn.Dense(c.hidden)(emb.reshape(*emb.shape[:2], -1))        # slots × V
            emb = emb * b.cfg_mask[:, None, None]
            x = jnp.broadcast_to(x, (n, cn, c.hidden)).at[b.cfg_node].add(emb)
        layer = SageLayer if c.layer == "sage" else GcnLayer
        for _ in range(c.layers):
            x = layer(c.hidden)(x, b)
        # no final LayerNorm: per-node magnitudes carry "how much does this node cost"
        mask = b.node_mask[:, None, None]
        count = _segment_sum(b.node_mask, b.node_seg, s + 1)[:s, None, None]
        mean = _segment_sum(x * mask, b.node_seg, s + 1)[:s] / jnp.maximum(count, 1.0)
        peak = jax.ops.segment_max(jnp.where(mask > 0, x, -jnp.inf), b.node_seg, s + 1)[:s]
        peak = jnp.where(jnp.isfinite(peak), peak, 0.0)
        cm = b.cfg_mask[:, None, None]
        cseg = b.node_seg[b.cfg_node]
        ccount = _segment_sum(b.cfg_mask, cseg, s + 1)[:s, None, None]
        cmean = _segment_sum(x[b.cfg_node] * cm, cseg, s + 1)[:s] / jnp.maximum(ccount, 1.0)
        out = jnp.concatenate([mean, peak, cmean], -1)
        return nn.Dense(c.hidden)(out) * b.seg_mask[:, None, None]


class CrossConfigAttention(nn.Module):
    """Self-attention across a graph's configs (Kaggle 1st place), masked, residual."""

    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array, valid: Arr) -> jax.Array:
        y = nn.LayerNorm()(x)
        q, k, v = (nn.Dense(self.hidden)(y) for _ in range(3))
        logits = jnp.einsum("bch,bdh->bcd", q, k) / jnp.sqrt(self.hidden)
        logits = jnp.where(valid[:, None, :] > 0, logits, -1e9)
        return x + nn.Dense(self.hidden)(jnp.einsum("bcd,bdh->bch", nn.softmax(logits), v))


class Head(nn.Module):
    """Graph embeddings (+ tile config features) → one cost per config ``[B, C]``."""

    cfg: ModelConfig

    @nn.compact
    def __call__(self, graph_emb: jax.Array, graph_cfg: Arr, valid: Arr) -> jax.Array:
        h = self.cfg.hidden
        x = jnp.broadcast_to(graph_emb, (*valid.shape, h))
        if graph_cfg.shape[-1]:
            x = x + nn.Dense(h)(nn.gelu(nn.Dense(h)(graph_cfg)))
        if self.cfg.cross_config_attention:
            x = CrossConfigAttention(h)(x, valid)
        x = nn.gelu(nn.Dense(h)(x))
        return nn.Dense(1)(x)[..., 0]


def combine(seg_emb: jax.Array, seg_graph: Arr, seg_mask: Arr, stale: Stale,
            batch_graphs: int) -> jax.Array:
    """Mean of fresh + historical segment embeddings per graph → ``[B, Cn, H]``."""
    b = batch_graphs + 1
    total = (_segment_sum(seg_emb * seg_mask[:, None, None], seg_graph, b)
             + _segment_sum(stale.emb * stale.mask[:, None, None], stale.graph, b))
    count = _segment_sum(seg_mask, seg_graph, b) + _segment_sum(stale.mask, stale.graph, b)
    return total[:-1] / jnp.maximum(count[:-1], 1.0)[:, None, None]


class CostModel(nn.Module):
    cfg: ModelConfig

    def setup(self) -> None:
        self.values = nn.Embed(NUM_VALUES, self.cfg.value_dim)
        self.encoder = SegmentEncoder(self.cfg)
        self.head = Head(self.cfg)

    def encode(self, b: Batch) -> jax.Array:
        return self.encoder(b, self.values)

    def score(self, graph_emb: jax.Array, graph_cfg: Arr, valid: Arr) -> jax.Array:
        return self.head(graph_emb, graph_cfg, valid)

    def __call__(self, b: Batch, stale: Stale) -> tuple[jax.Array, jax.Array]:
        """(cost per config [B, C], fresh segment embeddings [S, Cn, H])."""
        seg = self.encode(b)
        graph = combine(seg, b.seg_graph, b.seg_mask, stale, b.valid.shape[0])
        return self.score(graph, b.graph_cfg, b.valid), seg
