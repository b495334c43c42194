"""Preprocessing: pruning, −1 layout padding, normalisation, segments, packing, HLO extras."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from tpugraphs_tools.baseline import PrepareOptions
from tpugraphs_tools.baseline.batching import Item, bucket, pack
from tpugraphs_tools.baseline.data import GraphInfo, GraphRecord
from tpugraphs_tools.baseline.features import Normalizer, layout_categories, prune_nodes
from tpugraphs_tools.baseline.hlo_features import EXTRA_FEATURES, extra_features
from tpugraphs_tools.baseline.prepare import FeatureStats, finalize, load_raw
from tpugraphs_tools.baseline.synthetic import layout_graph
from tpugraphs_tools.features import featurize
from tpugraphs_tools.format import opcode_id
from tpugraphs_tools.hlo import from_lowered
from tpugraphs_tools.partition import partition_graph


def _raw(seed: int = 0, n: int = 60, configs: int = 6, **opts):
    arrays, copies = layout_graph(seed, n, configs)
    info = GraphInfo(f"g{seed}", "layout", "layout", "p", "train")
    return load_raw(GraphRecord(info, arrays, copies), PrepareOptions(**opts))


def test_prune_keeps_configurable_and_neighbours() -> None:
    add, dot = opcode_id("add"), opcode_id("dot")
    opcode = np.array([add, add, dot, add, add, add], np.uint8)
    edges = np.array([[1, 0], [2, 1], [3, 2], [4, 3], [5, 4]])
    assert prune_nodes(opcode, edges, np.array([2])).tolist() == [1, 2, 3]
    raw = _raw(prune=True)
    full = _raw()
    assert raw.num_nodes < full.num_nodes
    assert (raw.opcode[raw.cfg_ids] == full.opcode[full.cfg_ids]).all()
    assert raw.edges.max() < raw.num_nodes


def test_layout_categories_pad_minus_one() -> None:
    feat = np.zeros((2, 140), np.float32)
    feat[0, 21:23] = [4, 8]           # rank 2
    feat[0, 134:136] = [1, 0]
    cats = layout_categories(feat)
    assert cats[0].tolist() == [1, 0, -1, -1, -1, -1]
    assert cats[1].tolist() == [-1] * 6  # scalar


def test_normalizer_drops_constant_columns() -> None:
    norm = Normalizer.empty(3)
    norm.update(np.array([[1.0, 5.0, 0.0], [3.0, 5.0, 10.0]]))
    assert norm.keep.tolist() == [True, False, True]
    out = norm(np.array([[3.0, 7.0, 0.0]]))
    assert out.shape == (1, 2) and out[0, 0] == 1.0 and out[0, 1] == 0.0


def test_segments_cover_graph_and_pack_pads_to_buckets() -> None:
    raw = _raw(n=200)
    stats = FeatureStats.fit([raw], pad_minus_one=True)
    seg = partition_graph(raw.edges, raw.num_nodes, max_segment_nodes=50).node_segment
    g = finalize(raw, stats, seg)
    nodes = np.concatenate([s.nodes for s in g.segments])
    assert sorted(nodes.tolist()) == list(range(raw.num_nodes))
    inside = sum(s.edges.shape[0] for s in g.segments)
    cut = int(np.count_nonzero(seg[raw.edges[:, 0]] != seg[raw.edges[:, 1]]))
    assert inside + cut == raw.edges.shape[0]
    assert sum(s.cfg_pos.size for s in g.segments) == raw.cfg_ids.size
    assert g.layout_cat.shape == (raw.num_nodes, 6)
    b = pack([Item(g, (0, 1), np.arange(4))], batch_graphs=2, configs=8)
    n = sum(g.segments[i].nodes.size for i in (0, 1))
    assert b.opcode.shape[0] == bucket(n + 1, 64) and int(b.node_mask.sum()) == n
    assert b.cfg_feat.shape[1:] == (8, 18) and b.valid.tolist()[0] == [1] * 4 + [0] * 4
    assert b.seg_graph.tolist() == [0, 0] and b.valid[1].sum() == 0
    pad = b.edge_mask == 0
    assert (b.senders[pad] == b.opcode.shape[0] - 1).all()
    assert bucket(1, 8) == 8 and bucket(65, 8) == 128 and bucket(64, 8) == 64


def test_senders_are_operands_and_receivers_consumers_as_in_jraph() -> None:
    """Edge [u, v] means u consumes v: data flows v → u, so v sends and u receives, and a
    node's operands are the edges it receives (jraph's GraphsTuple convention)."""
    raw = _raw(n=40)
    g = finalize(raw, FeatureStats.fit([raw], pad_minus_one=False))
    b = pack([Item(g, (0,), np.arange(2))], batch_graphs=1, configs=2)
    edges, n = np.asarray(raw.edges), raw.num_nodes
    m = edges.shape[0]
    assert b.senders[:m].tolist() == edges[:, 1].tolist()
    assert b.receivers[:m].tolist() == edges[:, 0].tolist()
    operands = np.bincount(edges[:, 0], minlength=n)
    users = np.bincount(edges[:, 1], minlength=n)
    np.testing.assert_allclose(b.w_in[:n], 1 / np.maximum(operands, 1))
    np.testing.assert_allclose(b.w_out[:n], 1 / np.maximum(users, 1))


def test_hlo_extra_features_from_real_program() -> None:
    def f(a, b, w):
        return jnp.tanh(jnp.einsum("bij,bjk->bik", a, b)).reshape(2, -1) @ w

    src = from_lowered(jax.jit(f).lower(jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5)),
                                        jnp.ones((15, 7))), "f")
    graph = featurize(src.module)
    extra = extra_features(src.text, graph.num_nodes)
    assert extra.shape == (graph.num_nodes, len(EXTRA_FEATURES))
    dots = [i for i, (_, inst) in enumerate(src.module.instructions()) if inst.opcode == "dot"]
    batched = extra[dots[0]]
    assert batched[:6].tolist() == [1, 1, 1, 1, 4, 2]      # contract k=4, batch 2
    assert batched[6:12].tolist() == [3, 2, 3, 4, 0, 24]   # lhs f32[2,3,4]
    assert extra[dots[1]][12:18].tolist() == [2, 15, 7, 0, 0, 105]
    others = [i for i in range(graph.num_nodes) if i not in dots]
    assert not extra[others].any()
