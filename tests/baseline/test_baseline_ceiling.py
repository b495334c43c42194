"""The noise ceiling and headroom on labels whose noise is known."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tpugraphs_tools.store import (
    Z95,
    graph_label_stats,
    headroom,
    noise_ceiling,
    shared_log_se,
)


def _ci(truth: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 95% CI around each label on the log scale with standard error ``se``."""
    return truth * np.exp(-Z95 * se), truth * np.exp(Z95 * se)


def _simulated_tau(truth: np.ndarray, se: np.ndarray, draws: int, seed: int,
                   sure: np.ndarray | None = None) -> float:
    """Brute force: τ between two independent noisy measurements, averaged over draws."""
    rng = np.random.default_rng(seed)
    taus = []
    upper = np.triu(np.ones((truth.size, truth.size), bool), k=1)
    for _ in range(draws):
        a = np.log(truth) + rng.normal(0, se)
        b = np.log(truth) + rng.normal(0, se)
        if sure is None:
            taus.append(stats.kendalltau(a, b).statistic)
        else:
            agree = np.sign(a[:, None] - a[None, :]) * np.sign(b[:, None] - b[None, :])
            taus.append(agree[sure & upper].mean())
    return float(np.mean(taus))


def test_ceiling_matches_a_simulation_of_two_measurements() -> None:
    # two-level truth: half the configs 3% slower, noise se 2% (a pair across levels is
    # mostly but not always ordered the same by two reruns, a pair within a level never)
    truth = np.repeat([1.0, 1.03], 12)
    se = np.full(truth.size, 0.02)
    low, high = _ci(truth, se)
    ceiling = noise_ceiling(truth, low, high)
    assert ceiling is not None and ceiling.pairs == 24 * 23 // 2
    simulated = _simulated_tau(truth, se, draws=400, seed=0)
    assert ceiling.kendall_tau == pytest.approx(simulated, abs=0.02)
    assert 0.05 < ceiling.kendall_tau < 0.5     # neither trivial end


def test_sure_pair_ceiling_matches_a_simulation_over_the_disjoint_pairs() -> None:
    truth = np.exp(np.linspace(0, 0.3, 16))
    se = np.where(np.arange(16) % 2 == 0, 0.01, 0.06)
    low, high = _ci(truth, se)
    ceiling = noise_ceiling(truth, low, high)
    assert ceiling is not None and 0 < ceiling.sure_pairs < ceiling.pairs
    sure = (high[:, None] < low[None, :]) | (high[None, :] < low[:, None])
    simulated = _simulated_tau(truth, se, draws=400, seed=1, sure=sure)
    assert ceiling.kendall_tau_sure == pytest.approx(simulated, abs=0.02)
    assert ceiling.kendall_tau_sure > ceiling.kendall_tau   # sure pairs are the clear ones


def test_shared_default_noise_cancels_in_the_order_of_two_configs() -> None:
    # every label is a ratio to the same default rounds: a per-rerun shift δ (the default's
    # noise, SD s) hits all non-default labels at once and cannot reorder them; the A/A
    # control (a copy of the default, own noise SD s too) has variance 2s², half of it shared
    s = 0.01
    truth = np.concatenate([[1.0], np.repeat([1.01, 1.03], 10)])   # the default first
    se = np.r_[0.0, np.full(20, math.sqrt(2) * s)]                  # own ⊕ shared
    low, high = _ci(truth, se)
    rng = np.random.default_rng(3)
    taus = []
    for _ in range(400):
        a, b = (np.log(truth) + np.r_[0.0, rng.normal(0, s, 20) - rng.normal(0, s)]
                for _ in range(2))
        taus.append(stats.kendalltau(a, b).statistic)
    control = pl.DataFrame({"status": ["control"], "relative_to_default": [1.0],
                            "relative_ci_low": [math.exp(-Z95 * math.sqrt(2) * s)],
                            "relative_ci_high": [math.exp(Z95 * math.sqrt(2) * s)]})
    shared = shared_log_se(control)
    assert shared == pytest.approx(s)
    with_shared = noise_ceiling(truth, low, high, shared)
    independent = noise_ceiling(truth, low, high)
    assert with_shared is not None and independent is not None
    assert with_shared.kendall_tau == pytest.approx(float(np.mean(taus)), abs=0.02)
    assert independent.kendall_tau < with_shared.kendall_tau - 0.05   # too pessimistic
    # two controls (two timing batches share no default rounds): nothing is taken out
    assert shared_log_se(pl.concat([control, control])) == 0.0
    # graph_label_stats (tgt report, headroom) reads the control among the graph's rows
    rows = pl.DataFrame({"status": ["ok"] * truth.size, "is_default": [True] + [False] * 20,
                         "relative_to_default": truth, "relative_ci_low": low,
                         "relative_ci_high": high})
    alone = graph_label_stats(rows)[0]
    with_control = graph_label_stats(pl.concat([rows, control.with_columns(
        is_default=pl.lit(False))], how="diagonal"))[0]
    assert alone is not None and with_control is not None
    assert alone.kendall_tau == pytest.approx(independent.kendall_tau)
    assert with_control.kendall_tau == pytest.approx(with_shared.kendall_tau)


def test_zero_noise_gives_one_and_huge_noise_gives_about_zero() -> None:
    truth = np.exp(np.linspace(0, 0.2, 10))
    exact = noise_ceiling(truth, truth, truth)
    assert exact is not None and exact.kendall_tau == 1.0 and exact.kendall_tau_sure == 1.0
    low, high = _ci(truth, np.full(10, 50.0))
    noisy = noise_ceiling(truth, low, high)
    assert noisy is not None and noisy.kendall_tau < 1e-4
    assert math.isnan(noisy.kendall_tau_sure) and noisy.sure_pairs == 0


def test_no_ci_means_no_ceiling_and_unknown_rows_are_left_out() -> None:
    truth = np.array([1.0, 1.1, 1.2])
    nan = np.full(3, np.nan)
    assert noise_ceiling(truth, nan, nan) is None
    partial = noise_ceiling(truth, np.array([1.0, np.nan, 1.2]), np.array([1.0, np.nan, 1.2]))
    assert partial is not None and partial.pairs == 1 and partial.kendall_tau == 1.0


def test_ceiling_in_blocks_equals_one_block() -> None:
    rng = np.random.default_rng(3)
    truth = np.exp(rng.normal(0, 0.05, 1100))        # > one 512-row block
    low, high = _ci(truth, rng.uniform(0.005, 0.03, truth.size))
    whole = noise_ceiling(truth, low, high)
    from tpugraphs_tools.store import label_stats

    block = label_stats._BLOCK
    try:
        label_stats._BLOCK = 4096
        single = noise_ceiling(truth, low, high)
    finally:
        label_stats._BLOCK = block
    assert whole is not None and single is not None
    assert whole.pairs == single.pairs == 1100 * 1099 // 2
    assert whole.kendall_tau == pytest.approx(single.kendall_tau, rel=1e-9)
    assert whole.sure_pairs == single.sure_pairs


def test_headroom_of_a_hand_made_graph() -> None:
    ratio = np.array([0.8, 0.95, 1.02, 1.1, 1.3])
    low = ratio - np.array([0.05, 0.1, 0.01, 0.01, 0.01])
    high = ratio + np.array([0.05, 0.1, 0.01, 0.01, 0.01])
    room = headroom(ratio, low, high)
    assert room is not None and room.configs == 5
    assert room.fastest == 0.8 and (room.fastest_low, room.fastest_high) == pytest.approx((0.75, 0.85))
    assert room.faster_share == pytest.approx(2 / 5)      # 0.8 and 0.95 below 1
    assert room.surely_faster_share == pytest.approx(1 / 5)   # 0.95's CI reaches 1.05
    assert room.median == pytest.approx(1.02)
    assert room.p5 == pytest.approx(np.percentile(ratio, 5)) and room.p95 < 1.3
    slow = headroom(np.array([1.1, 1.2]))
    assert slow is not None and slow.fastest == 1.1 and slow.faster_share == 0.0
    assert slow.fastest_low is None and slow.surely_faster_share is None
    assert headroom(np.array([np.nan])) is None


def test_graph_label_stats_reads_one_graphs_config_rows() -> None:
    rows = pl.DataFrame({
        "status": ["ok", "ok", "ok", "compile_error", "ok"],
        "is_default": [True, False, False, False, False],
        "relative_to_default": [1.0, 0.9, 1.2, None, 1.5],
        "relative_ci_low": [0.99, 0.88, 1.18, None, 1.45],
        "relative_ci_high": [1.01, 0.92, 1.22, None, 1.55]})
    ceiling, room = graph_label_stats(rows)
    assert ceiling is not None and ceiling.pairs == 6 and ceiling.sure_pairs == 6  # default too
    assert ceiling.kendall_tau > 0.99
    assert room is not None and room.configs == 3 and room.fastest == 0.9
    assert room.fastest_high == 0.92 and room.surely_faster_share == pytest.approx(1 / 3)
    no_ci = graph_label_stats(rows.drop("relative_ci_low", "relative_ci_high"))
    assert no_ci[0] is None and no_ci[1] is not None and no_ci[1].fastest_low is None


def test_large_graphs_use_a_seeded_sample_of_configs() -> None:
    from tpugraphs_tools.store import label_stats

    rng = np.random.default_rng(4)
    truth = np.exp(rng.normal(0, 0.05, 300))
    low, high = _ci(truth, rng.uniform(0.005, 0.03, truth.size))
    whole = noise_ceiling(truth, low, high)
    cap = label_stats.MAX_CONFIGS
    try:
        label_stats.MAX_CONFIGS = 150
        sampled = noise_ceiling(truth, low, high)
        again = noise_ceiling(truth, low, high)
    finally:
        label_stats.MAX_CONFIGS = cap
    assert whole is not None and sampled is not None and again is not None
    assert sampled.pairs == 150 * 149 // 2 and sampled == again      # seeded
    assert sampled.kendall_tau == pytest.approx(whole.kendall_tau, abs=0.05)
