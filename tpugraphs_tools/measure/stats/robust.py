"""Robust statistics of one item's log-ratios: the trimmed mean with Yuen's standard error,
and the spread between the loaded copies of a program (placement).

Apart from ``measure/stats/rounds.py`` (the rounds and the stopping rule) because the replicas,
the benches and the tests read these alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tpugraphs_tools.measure.stats.stopping import MIN_ROUNDS_PER_COPY

TRIM = 0.2


def trimmed_stats(values: Sequence[float], trim: float = TRIM) -> tuple[float, float, int]:
    """(trimmed mean, its standard error, degrees of freedom) by Yuen's method (winsorized
    variance); fewer than 3 values give an infinite standard error."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0:
        return math.nan, math.inf, 0
    g = math.floor(trim * n)
    center = float(x[g:n - g].mean())
    h = n - 2 * g
    if n < 3 or h < 2:
        return center, math.inf, 0
    w = x.copy()
    w[:g] = x[g]
    w[n - g:] = x[n - g - 1]
    sw2 = float(w.var(ddof=1))
    return center, math.sqrt((n - 1) * sw2 / (h * (h - 1))), h - 1


@dataclass
class Placement:
    """Pooled between-copy variance of log-ratios (placement effects), kept across batches."""

    items: list[tuple[float, float]] = field(default_factory=list)  # (s², mean copy se²)

    def variance(self, extra: Sequence[tuple[float, float]] = ()) -> float:
        pool = [*self.items, *extra]
        return max(0.0, float(np.mean([s2 - v for s2, v in pool]))) if pool else 0.0


def copy_spread(log_ratios: Sequence[float], copies: Sequence[int]) -> tuple[float, float] | None:
    """(variance of the per-copy means, mean squared se of a copy mean) of one item, or None
    with fewer than two copies of ≥ ``MIN_ROUNDS_PER_COPY`` rounds each."""
    if len(log_ratios) != len(copies):
        raise ValueError("one copy index per log-ratio")
    values, which = np.asarray(log_ratios, dtype=np.float64), np.asarray(copies)
    groups = [values[which == copy] for copy in np.unique(which)]
    stats_ = [trimmed_stats(g) for g in groups if g.size >= MIN_ROUNDS_PER_COPY]
    if len(stats_) < 2:
        return None
    means = [m for m, _, _ in stats_]
    return float(np.var(means, ddof=1)), float(np.mean([se ** 2 for _, se, _ in stats_]))
