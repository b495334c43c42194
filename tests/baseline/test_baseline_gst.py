"""GST: historical table semantics, stale dropout, training, memory vs full-graph."""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.baseline import PrepareOptions, TrainConfig
from tpugraphs_tools.baseline.batching import Item, pack
from tpugraphs_tools.baseline.data import GraphInfo, GraphRecord
from tpugraphs_tools.baseline.gst import EmbeddingTable, node_chunks, stale_inputs
from tpugraphs_tools.baseline.model import ModelConfig
from tpugraphs_tools.baseline.prepare import FeatureStats, finalize, load_raw
from tpugraphs_tools.baseline.synthetic import layout_graph
from tpugraphs_tools.baseline.train import Trainer
from tpugraphs_tools.partition import partition_graph

MODEL = ModelConfig(hidden=16, layers=1)


def _graphs(n: int, count: int, segment_nodes: int | None, configs: int = 8):
    raws = []
    for seed in range(count):
        arrays, copies = layout_graph(seed, n, configs)
        info = GraphInfo(f"g{seed}", "layout", "layout", f"p{seed}", "train")
        raws.append(load_raw(GraphRecord(info, arrays, copies), PrepareOptions()))
    stats = FeatureStats.fit(raws, False)
    out = []
    for raw in raws:
        seg = None if segment_nodes is None else partition_graph(
            raw.edges, raw.num_nodes, max_segment_nodes=segment_nodes).node_segment
        out.append(finalize(raw, stats, seg))
    return out


def test_table_shares_config_independent_segments() -> None:
    (g,) = _graphs(120, 1, 5)
    table = EmbeddingTable(dim=4)
    free = next(i for i, s in enumerate(g.segments) if s.cfg_pos.size == 0)
    busy = next(i for i, s in enumerate(g.segments) if s.cfg_pos.size > 0)
    configs = np.array([1, 3])
    assert table.missing(g, [free, busy], configs) == [free, busy]
    table.put(g, free, configs, np.ones((2, 4)))
    table.put(g, busy, configs, np.stack([np.full(4, 1.0), np.full(4, 3.0)]))
    assert table.missing(g, [free, busy], np.array([5])) == [busy]   # free: any config
    assert table.missing(g, [free, busy], configs) == []
    got = table.get(g, busy, configs, width=3)
    assert got[:, 0].tolist() == [1.0, 3.0, 0.0]
    assert node_chunks(g, list(range(len(g.segments))), 40)
    items = [Item(g, (busy,), configs)]
    for s in range(len(g.segments)):
        table.put(g, s, configs, np.zeros((2, 4)))
    rng = np.random.default_rng(0)
    none = stale_inputs(table, items, batch_graphs=1, cn=2, keep_prob=0.0, rng=rng)
    assert none.mask.sum() == 0
    every = stale_inputs(table, items, batch_graphs=1, cn=2, keep_prob=1.0, rng=rng)
    assert every.mask.sum() == len(g.segments) - 1
    half = [stale_inputs(table, items, batch_graphs=1, cn=2, keep_prob=0.5, rng=rng).mask.sum()
            for _ in range(200)]
    assert abs(np.mean(half) / (len(g.segments) - 1) - 0.5) < 0.1


def test_gst_trains_finetunes_and_predicts() -> None:
    graphs = _graphs(90, 4, 30)
    cfg = TrainConfig(epochs=2, configs_per_graph=4, batch_graphs=2, gst=True,
                      finetune_epochs=1, forward_nodes=64)
    trainer = Trainer(MODEL, cfg, graphs[0])
    history = trainer.fit(graphs)
    assert all(np.isfinite(history.loss)) and len(history.finetune_loss) == 1
    assert trainer.table.nbytes > 0
    pred = trainer.predict(graphs[0])
    assert pred.shape == (8,) and np.isfinite(pred).all()
    assert history.compiles["step"] <= 4


def test_gst_step_needs_far_less_memory_than_full_graph() -> None:
    (full,) = _graphs(4000, 1, None)
    (seg,) = _graphs(4000, 1, 250)
    cfg = TrainConfig(configs_per_graph=4, batch_graphs=1)
    configs = np.arange(4)
    t_full = Trainer(MODEL, cfg, full)
    m_full = t_full.step_memory(pack([Item(full, (0,), configs)], batch_graphs=1, configs=4),
                                t_full.no_stale())
    t_gst = Trainer(MODEL, TrainConfig(configs_per_graph=4, batch_graphs=1, gst=True), seg)
    items = [Item(seg, (0,), configs)]
    for s in range(len(seg.segments)):
        t_gst.table.put(seg, s, configs, np.zeros((4, MODEL.hidden)))
    stale = stale_inputs(t_gst.table, items, batch_graphs=1, cn=4, keep_prob=1.0,
                         rng=np.random.default_rng(0))
    m_gst = t_gst.step_memory(pack(items, batch_graphs=1, configs=4), stale)
    assert m_full["peak"] >= 3 * m_gst["peak"]
