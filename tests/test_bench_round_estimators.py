"""The round-estimator benchmark's two estimators (bench/bench_round_estimators.py) recover
known offsets from synthetic sample sequences with drift."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_round_estimators import adjacent_estimates, shipped_estimates


def _rounds(offsets: list[float], rounds: int, seed: int = 0
            ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Shuffled rounds of the default (-1) and len(offsets) items: log time = the item's
    offset + a slow random-walk drift + noise; per-item round log-ratios, items, log times."""
    rng, order_rng = np.random.default_rng(seed), random.Random(seed)
    drift, items, logs = 0.0, [], []
    ratios: list[list[float]] = [[] for _ in offsets]
    for _ in range(rounds):
        order = [-1, *range(len(offsets))]
        order_rng.shuffle(order)
        row = {}
        for i in order:
            drift += rng.normal(0, 0.02)
            row[i] = (0.0 if i < 0 else offsets[i]) + drift + rng.normal(0, 0.03)
            items.append(i)
            logs.append(row[i])
        for i in range(len(offsets)):
            ratios[i].append(row[i] - row[-1])
    return [np.asarray(r) for r in ratios], np.asarray(items), np.asarray(logs)


def test_both_estimators_recover_the_items_offsets_from_the_default():
    offsets = [0.0, 0.02, -0.05, 0.10]
    ratios, items, logs = _rounds(offsets, 600)
    np.testing.assert_allclose(shipped_estimates(ratios), offsets, atol=0.01)
    np.testing.assert_allclose(adjacent_estimates(items, logs, len(offsets)), offsets,
                               atol=0.01)


def test_under_drift_alone_adjacent_differences_are_the_more_precise():
    """Where the noise is all drift shared by neighbouring samples, time-adjacent differences
    hold less of it than the round's default sample does: the check the benchmark makes."""
    offsets = [0.0] * 6
    shipped, adjacent = [], []
    for seed in range(12):
        ratios, items, logs = _rounds(offsets, 150, seed=seed)
        shipped.append(shipped_estimates(ratios))
        adjacent.append(adjacent_estimates(items, logs, len(offsets)))
    assert np.std(adjacent) < np.std(shipped)
