"""Metrics against hand-computed cases: ties, k beyond the config count, a single config."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tpugraphs_tools.baseline.metrics import (
    graph_metrics,
    kaggle_tile_score,
    kendall_tau,
    kendall_tau_sure,
    mean_metrics,
    opa,
    slowdown,
    top_k,
    top_k_error,
)


def test_opa_hand_cases() -> None:
    # pairs with y_i < y_j: (0,1) right, (0,2) right, (1,2) wrong
    assert opa(np.array([1, 2, 3]), np.array([1, 3, 2])) == pytest.approx(2 / 3)
    # tied runtimes form no pair; both remaining pairs are inverted
    assert opa(np.array([1, 1, 2]), np.array([3, 2, 1])) == 0.0
    # a tie in the prediction does not order the pair: wrong
    assert opa(np.array([1, 2]), np.array([5, 5])) == 0.0
    assert math.isnan(opa(np.array([4, 4]), np.array([1, 2])))


def test_kendall_matches_scipy_tau_b_with_ties() -> None:
    y, pred = np.array([1, 2, 3, 4]), np.array([1, 2, 2, 4])
    # 5 concordant, 0 discordant, one tie in pred: 5 / sqrt(6 * 5)
    assert kendall_tau(y, pred) == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau(y, pred) == pytest.approx(stats.kendalltau(y, pred).statistic)
    assert kendall_tau(y, -pred) == pytest.approx(-5 / math.sqrt(30))
    assert math.isnan(kendall_tau(np.array([1, 1, 1]), np.array([1, 2, 3])))


def test_slowdown_topk_and_kaggle() -> None:
    y = np.array([10.0, 5.0, 20.0, 8.0])
    pred = np.array([0.0, 3.0, 1.0, 2.0])          # model order: 0, 2, 3, 1
    assert slowdown(y, pred, 1) == 2.0             # picks 10, best is 5
    assert slowdown(y, pred, 2) == 2.0             # {10, 20}
    assert slowdown(y, pred, 3) == pytest.approx(8 / 5)
    assert slowdown(y, pred, 10) == 1.0            # k beyond the configs: all of them
    assert top_k_error(y, pred, 1) == 1.0
    assert top_k_error(y, pred, 3) == pytest.approx(0.6)
    assert kaggle_tile_score(y, pred) == 1.0       # 4 configs < 5: best always included
    y6 = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    assert kaggle_tile_score(y6, np.arange(6.0)) == 0.0  # top-5 best is 2, true best 1


def test_ties_in_prediction_break_by_index() -> None:
    assert top_k(np.array([0.0, 0.0, -1.0]), 2).tolist() == [2, 0]
    assert slowdown(np.array([3.0, 1.0]), np.array([0.0, 0.0]), 1) == 3.0


def test_single_config() -> None:
    m = graph_metrics(np.array([7.0]), np.array([0.3]))
    assert math.isnan(m["kendall_tau"]) and math.isnan(m["opa"])
    assert m["slowdown@1"] == 1.0 and m["top5_error"] == 0.0 and m["kaggle_tile_score"] == 1.0


def test_mean_skips_nan() -> None:
    rows = [{"kendall_tau": 0.5}, {"kendall_tau": float("nan")}, {"kendall_tau": 1.0}]
    m = mean_metrics(rows)
    assert m["kendall_tau"] == 0.75 and m["kendall_tau_n"] == 2 and m["graphs"] == 3
    assert mean_metrics([]) == {"graphs": 0.0}


def test_kendall_tau_sure_counts_only_pairs_whose_label_cis_are_disjoint() -> None:
    y = np.array([1.0, 1.01, 2.0, 3.0])
    ci = np.array([[0.95, 1.05], [0.96, 1.06], [1.9, 2.1], [2.9, 3.1]])
    # Pairs (0,1) overlap; the other five are sure. pred swaps 0 and 1 (unsure: ignored)
    # and 2 and 3 (sure: one discordant pair).
    pred = np.array([2.0, 1.0, 4.0, 3.0])
    assert kendall_tau_sure(y, pred, ci) == pytest.approx((4 - 1) / 5)
    assert kendall_tau_sure(y, y, ci) == pytest.approx(1.0)
    # Unknown CIs (NaN) and all-overlapping CIs leave nothing to score.
    assert math.isnan(kendall_tau_sure(y, pred, np.full((4, 2), np.nan)))
    assert math.isnan(kendall_tau_sure(y, pred, np.tile([0.0, 9.0], (4, 1))))
    assert "kendall_tau_sure" in graph_metrics(y, pred, ci)
    assert "kendall_tau_sure" not in graph_metrics(y, pred)


def test_mean_metrics_tolerates_a_metric_some_graphs_lack() -> None:
    out = mean_metrics([{"kendall_tau": 0.5}, {"kendall_tau": 0.1, "kendall_tau_sure": 0.8}])
    assert out["kendall_tau"] == pytest.approx(0.3)
    assert out["kendall_tau_sure"] == pytest.approx(0.8) and out["kendall_tau_sure_n"] == 1
