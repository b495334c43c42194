"""Graph Segment Training pieces: historical embedding table, stale inputs, sampling.

Per step and graph, GST backprops through a few sampled segments; the other segments enter as
embeddings from an earlier step (the table), each kept with probability ``keep_prob`` (stale
embedding dropout, p = 0.5 in the paper). A (segment, config) never computed yet is filled by a
gradient-free forward pass first — the "forward each segment" of the first visits.

Layout segment embeddings depend on the config only through configurable nodes, so segments
without any are stored once (column 0) and shared by every config.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tpugraphs_tools.baseline.batching import Item, Stale, bucket
from tpugraphs_tools.baseline.prepare import PreparedGraph


class EmbeddingTable:
    """graph → float32 [S, columns, D] with a filled mask; columns = configs (layout) or 1."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._emb: dict[str, np.ndarray] = {}
        self._filled: dict[str, np.ndarray] = {}

    def _arrays(self, g: PreparedGraph) -> tuple[np.ndarray, np.ndarray]:
        gid = g.info.graph_id
        if gid not in self._emb:
            cols = g.num_configs if g.info.spec.per_node_configs else 1
            self._emb[gid] = np.zeros((g.num_segments, cols, self.dim), np.float32)
            self._filled[gid] = np.zeros((g.num_segments, cols), bool)
        return self._emb[gid], self._filled[gid]

    @staticmethod
    def _columns(g: PreparedGraph, seg: int, configs: np.ndarray) -> np.ndarray:
        if not g.info.spec.per_node_configs or g.segment_cfgs[seg] == 0:
            return np.zeros_like(configs)
        return configs

    def missing(self, g: PreparedGraph, segs: list[int], configs: np.ndarray) -> list[int]:
        _, filled = self._arrays(g)
        return [s for s in segs if not filled[s, self._columns(g, s, configs)].all()]

    def put(self, g: PreparedGraph, seg: int, configs: np.ndarray, emb: np.ndarray) -> None:
        """``emb`` [Cn, D] for ``configs`` (Cn = len(configs) for layout, 1 for tile)."""
        table, filled = self._arrays(g)
        cols = self._columns(g, seg, configs)
        if not g.info.spec.per_node_configs or g.segment_cfgs[seg] == 0:
            table[seg, 0] = emb[0]
            filled[seg, 0] = True
        else:
            table[seg, cols] = emb[:cols.size]
            filled[seg, cols] = True

    def get(self, g: PreparedGraph, seg: int, configs: np.ndarray, width: int) -> np.ndarray:
        """[width, D]: the embedding per config slot (zeros beyond ``len(configs)``)."""
        table, _ = self._arrays(g)
        out = np.zeros((width, self.dim), np.float32)
        if not g.info.spec.per_node_configs:
            out[:] = table[seg, 0]
        else:
            out[:configs.size] = table[seg, self._columns(g, seg, configs)]
        return out

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._emb.values())


def node_chunks(g: PreparedGraph, segs: list[int], max_nodes: int) -> list[list[int]]:
    """Group segments so each gradient-free forward pass holds at most ~max_nodes nodes."""
    out: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for s in segs:
        ns = int(g.segment_nodes[s])
        if cur and size + ns > max_nodes:
            out.append(cur)
            cur, size = [], 0
        cur.append(s)
        size += ns
    if cur:
        out.append(cur)
    return out


def fill_missing(table: EmbeddingTable, items: list[Item], encode: Callable[[list[Item]], list],
                 max_nodes: int) -> None:
    """Compute and store every (other segment, config) of ``items`` the table lacks."""
    for it in items:
        others = [s for s in range(it.graph.num_segments) if s not in it.segments]
        for chunk in node_chunks(it.graph, table.missing(it.graph, others, it.configs),
                                 max_nodes):
            embs = encode([Item(it.graph, tuple(chunk), it.configs)])
            for s, emb in zip(chunk, embs, strict=True):
                table.put(it.graph, s, it.configs, emb)


def stale_inputs(table: EmbeddingTable, items: list[Item], *, batch_graphs: int, cn: int,
                 keep_prob: float, rng: np.random.Generator) -> Stale:
    """Historical embeddings of every non-sampled segment, dropped with prob 1 − keep_prob."""
    embs, slots = [], []
    for slot, it in enumerate(items):
        for s in range(it.graph.num_segments):
            if s in it.segments or rng.random() >= keep_prob:
                continue
            embs.append(table.get(it.graph, s, it.configs, cn))
            slots.append(slot)
    size = bucket(len(embs), 1)
    emb = np.zeros((size, cn, table.dim), np.float32)
    graph = np.full(size, batch_graphs, np.int32)
    if embs:
        emb[:len(embs)] = np.stack(embs)
        graph[:len(embs)] = slots
    mask = (np.arange(size) < len(embs)).astype(np.float32)
    return Stale(emb, graph, mask)


def sample_segments(g: PreparedGraph, count: int, rng: np.random.Generator) -> tuple[int, ...]:
    s = g.num_segments
    return tuple(sorted(rng.choice(s, size=min(count, s), replace=False).tolist()))
