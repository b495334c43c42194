"""The rankers a cost model must beat, each on hand-made graphs whose best order is known."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tpugraphs_tools.baseline import ceiling, trees
from tpugraphs_tools.baseline.configstore import ConfigRows
from tpugraphs_tools.baseline.data import GraphInfo, TgtSource
from tpugraphs_tools.baseline.defaults import default_rows
from tpugraphs_tools.baseline.rankers import Rankers
from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset
from tpugraphs_tools.baseline.trivial import (
    near_default_distance,
    non_default_slots,
    trivial_metrics,
)
from tpugraphs_tools.format import TILE_CONFIG_WIDTH, opcode_id


def _graph(kind: str, feat: np.ndarray, runtime: np.ndarray, graph_id: str = "g",
           opcode: np.ndarray | None = None, ci: np.ndarray | None = None) -> SimpleNamespace:
    """The attributes of a PreparedGraph the rankers read."""
    opcode = np.full(10, opcode_id("add"), np.int32) if opcode is None else opcode
    return SimpleNamespace(
        info=GraphInfo(graph_id, kind, kind, "p", "test"), cfg_feat=ConfigRows.of(feat),
        runtime=ConfigRows.of(np.asarray(runtime, np.float64)), num_copies=None,
        label_ci=ConfigRows.of(ci) if ci is not None else None,
        num_configs=len(runtime), num_nodes=opcode.size, opcode=opcode,
        cfg_ids=np.arange(feat.shape[1] if feat.ndim == 3 else 0))


def _layout(rng: np.random.Generator, configs: int, nodes: int) -> np.ndarray:
    """int8 [c, nc, 18]: slot 0 holds 0/1 layouts, the other slots −1 (left to XLA)."""
    feat = np.full((configs, nodes, 18), -1, np.int8)
    feat[:, :, 0] = rng.integers(0, 2, (configs, nodes))
    feat[:, :, 1] = 1 - feat[:, :, 0]
    return feat


def test_non_default_slots_counts_slots_not_values() -> None:
    default = np.full((2, 18), -1, np.int8)
    feat = np.full((3, 2, 18), -1, np.int8)
    feat[1, 0, 0:2] = (1, 0)           # one slot, two values
    feat[2, 0, 0] = 1                  # two slots on node 0, one on node 1
    feat[2, 0, 6] = 0
    feat[2, 1, 12] = 0
    assert non_default_slots(feat, default).tolist() == [0, 1, 3]


def test_config_only_ranker_orders_by_non_default_count() -> None:
    rng = np.random.default_rng(0)
    feat = _layout(rng, 12, 8)
    feat[rng.random((12, 8)) < 0.5] = -1                 # half the nodes left to XLA
    feat[0] = -1                                         # row 0: the default
    default = feat[0].copy()
    slots = non_default_slots(feat, default)
    assert len(set(slots.tolist())) > 4
    g = _graph("layout", feat, 1.0 + slots)
    scored = trivial_metrics(g, seed=0, default=default)
    assert set(scored) == {"random", "non-default-slots"}
    assert scored["non-default-slots"]["kendall_tau"] > 0.99
    assert scored["non-default-slots"]["slowdown@1"] == 1.0
    assert "non-default-slots" not in trivial_metrics(g, seed=0)    # no default row known


def test_near_default_ranker_prefers_tiles_close_to_the_default() -> None:
    feat = np.zeros((6, TILE_CONFIG_WIDTH), np.float32)
    feat[:, 8] = [8, 16, 4, 32, 2, 128]
    default = feat[0]
    distance = near_default_distance(feat, default)
    assert distance.tolist() == pytest.approx(
        [0, *np.abs(np.log2(1 + feat[1:, 8]) - np.log2(9))])
    g = _graph("tile", feat, 1.0 + distance)
    scored = trivial_metrics(g, seed=0, default=default)
    assert scored["near-default"]["kendall_tau"] == pytest.approx(1.0)
    assert scored["near-default"]["kaggle_tile_score"] == 1.0   # the Kaggle tile score too


def _rule_graphs(rng: np.random.Generator, count: int, start: int) -> list[SimpleNamespace]:
    """Runtime grows with the share of nodes whose output layout value is 1."""
    out = []
    for i in range(count):
        feat = _layout(rng, 40, int(rng.integers(4, 9)))
        share = (feat[:, :, 0] == 1).mean(axis=1)
        runtime = 1e6 * (i + 1) * np.exp(0.5 * share + 0.01 * rng.standard_normal(40))
        out.append(_graph("layout", feat, runtime, f"g{start + i}"))
    return out


def test_tree_ranker_learns_a_config_rule_on_unseen_graphs() -> None:
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    train, held = _rule_graphs(rng, 6, 0), _rule_graphs(rng, 2, 100)
    rankers = Rankers.fit(train, {}, seed=0)
    assert rankers.tree is not None and rankers.notes == []
    for g in held:
        scored = rankers.score(g)
        assert scored[trees.NAME]["kendall_tau"] > 0.6, scored[trees.NAME]
        assert abs(scored["random"]["kendall_tau"]) < 0.3
    features = trees.features(held[0], None)
    assert features.shape == (40, 18 * 8 + 3 + 2 + trees.NUM_OPCODES)


def test_tree_ranker_is_skipped_with_a_note_without_lightgbm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lightgbm", None)
    rng = np.random.default_rng(2)
    rankers = Rankers.fit(_rule_graphs(rng, 2, 0), {}, seed=0)
    assert rankers.tree is None and rankers.notes == [trees.MISSING]
    assert trees.NAME not in rankers.score(_rule_graphs(rng, 1, 9)[0])
    assert "[trees]" in trees.MISSING


def test_scores_carry_the_ceiling_and_shares_of_it() -> None:
    rng = np.random.default_rng(3)
    feat = _layout(rng, 8, 3)
    runtime = np.exp(np.linspace(0, 0.1, 8))
    ci = np.stack([np.full(8, 0.99), np.full(8, 1.01)], axis=1)     # ±1% as label factors
    g = _graph("layout", feat, runtime, ci=ci)
    scored = Rankers(seed=0).score(g)
    top = scored[ceiling.NAME]
    expected = ceiling.noise_ceiling(runtime, runtime * 0.99, runtime * 1.01)
    assert top["kendall_tau"] == pytest.approx(expected.kendall_tau)
    ceiling.per_graph_shares(scored)
    assert scored["random"]["kendall_tau_of_ceiling"] == pytest.approx(
        scored["random"]["kendall_tau"] / top["kendall_tau"])
    assert Rankers(seed=0).coverage_notes([g]) == [
        "non-default-slots ranker not scored on 1 of 1 graphs: no default config row "
        "recorded (official trees mark none)"]


def test_pooled_share_is_a_ratio_of_means_over_graphs_with_a_ceiling() -> None:
    rows = [{"m": {"kendall_tau": 0.2}, ceiling.NAME: {"kendall_tau": 0.4, "pairs": 15.0}},
            {"m": {"kendall_tau": 0.4}, ceiling.NAME: {"kendall_tau": 0.8, "pairs": 15.0}},
            {"m": {"kendall_tau": 0.9}}]                                  # no ceiling: left out
    summary = {"m": {"kendall_tau": 0.5}, ceiling.NAME: {"kendall_tau": 0.6}}
    ceiling.pooled_shares(rows, summary)
    assert summary["m"]["kendall_tau_of_ceiling"] == pytest.approx(0.3 / 0.6)
    assert math.isnan(summary["m"]["kendall_tau_sure_of_ceiling"])


def test_no_pooled_share_from_too_few_pairs() -> None:
    """2 held-out configs per graph: one pair each, τ ±1 over a ceiling near 0 gave 1.83."""
    rows = [{"m": {"kendall_tau": 1.0}, ceiling.NAME: {"kendall_tau": 0.5, "pairs": 1.0}}
            for _ in range(ceiling.MIN_PAIRS - 1)]
    summary: dict[str, dict[str, float]] = {"m": {}, ceiling.NAME: {}}
    ceiling.pooled_shares(rows, summary)
    assert math.isnan(summary["m"]["kendall_tau_of_ceiling"])
    ceiling.pooled_shares([*rows, rows[0]], summary)
    assert summary["m"]["kendall_tau_of_ceiling"] == pytest.approx(2.0)


def test_default_rows_come_from_the_default_config(tmp_path: Path) -> None:
    write_synthetic_dataset(tmp_path / "ds", programs=1, graphs_per_program=2, nodes=(20, 30),
                            configs=5)
    source = TgtSource(tmp_path / "ds")
    infos = source.index()
    rows = default_rows(source, infos, None)
    assert set(rows) == {i.graph_id for i in infos}
    for info in infos:
        stored = source.load(info).arrays["node_config_feat"][0]   # config 0 is the default
        assert rows[info.graph_id].dtype == np.int8
        assert np.array_equal(rows[info.graph_id], stored.astype(np.int8))
