"""What a graph's stored labels allow: the noise ceiling of a ranking and the headroom.

Both read only ``relative_to_default`` and its 95% CI (``relative_ci_low``/``high``), so they
live beside the tables they read; the baseline report and ``tgt report`` show the same figures.

Noise ceiling: the Kendall τ expected between two independent measurements of the same
configs. Each label is taken as normal on the log scale around the stored label with standard
error ``log(high / low) / (2 · 1.96)``. For a pair with log difference ``d`` and combined
standard error ``s = sqrt(se_i² + se_j²)`` one measurement orders the pair as the labels do with
probability ``p = Φ(|d| / s)``, so two independent measurements agree in sign with expectation
``p² + (1 − p)² − 2p(1 − p) = (2p − 1)²``. Two continuous measurements have no ties, so their τ
is the mean of that sign agreement over the pairs: the expectation is exact, no sampling.

The labels of one timing batch are ratios to the same default rounds, so part of their errors
is shared and cancels when two non-default configs are compared; the A/A control measures it
(:func:`shared_log_se`). Without taking it out the ceiling read 0.080 τ (95% CI 0.027–0.132)
below the τ of real reruns; with it, +0.013 (−0.039 to +0.065): docs/baseline.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import polars as pl
from scipy.special import ndtr

Z95 = 1.959963984540054   # the normal 95% quantile: CI half-width (log scale) → standard error
_BLOCK = 512              # rows of the pair matrix computed at once (memory ∝ _BLOCK · c)
MAX_CONFIGS = 2000        # beyond this a graph's ceiling is the mean over a sample's pairs
# a pair's spread keeps at least this share of its variance after the shared part is removed
# (a guard against a control CI wider than the configs')
MIN_OWN_SHARE = 0.1
SAMPLE_SEED = 0


@dataclass(frozen=True)
class NoiseCeiling:
    """Expected τ between two independent measurements, over all pairs and over sure pairs."""

    kendall_tau: float        # NaN without a pair that has two known standard errors
    kendall_tau_sure: float   # over pairs with disjoint CIs; NaN without one
    pairs: int
    sure_pairs: int

    def to_json(self) -> dict[str, float]:
        return {"kendall_tau": self.kendall_tau, "kendall_tau_sure": self.kendall_tau_sure,
                "pairs": float(self.pairs), "sure_pairs": float(self.sure_pairs)}


@dataclass(frozen=True)
class Headroom:
    """Where a graph's speed lies relative to its default config."""

    configs: int                  # ok non-default configs with a label
    fastest: float                # fastest ÷ default (< 1: some config beats the default)
    fastest_low: float | None     # the fastest config's 95% CI, None without one
    fastest_high: float | None
    faster_share: float           # share of configs with a label below 1
    surely_faster_share: float | None   # share whose CI lies entirely below 1
    p5: float
    median: float
    p95: float

    def to_json(self) -> dict[str, float | int | None]:
        return {"configs": self.configs, "fastest": self.fastest,
                "fastest_low": self.fastest_low, "fastest_high": self.fastest_high,
                "faster_share": self.faster_share, "surely_faster_share": self.surely_faster_share,
                "p5": self.p5, "median": self.median, "p95": self.p95}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Headroom:
        """Inverse of :meth:`to_json` (other keys, e.g. a report's ``program``, ignored)."""
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**values)

    @property
    def beats_default(self) -> bool | None:
        """Some config is surely faster than the default: its whole 95% CI lies below 1. A
        label whose CI holds 1 does not count, whichever side of 1 it falls on; None
        without CIs (not known). The one definition every report counts by."""
        if self.surely_faster_share is None:
            return None
        return self.surely_faster_share > 0


@dataclass(frozen=True)
class BeatsDefault:
    """Graphs where a config beats the default (:attr:`Headroom.beats_default`)."""

    beaten: int   # graphs with a config whose 95% CI lies below 1
    graphs: int   # graphs with labelled non-default configs
    unknown: int  # of those, graphs whose labels carry no CIs (not known)

    def describe(self) -> str:
        """The sentence ``tgt baseline``, its report and ``tgt report`` all print."""
        return (f"a config beats the default (95% CI below 1) in {self.beaten}/{self.graphs} "
                "graphs" + (f" ({self.unknown} without CIs: not known)" if self.unknown else ""))


def beats_default(rooms: Iterable[Headroom | None]) -> BeatsDefault:
    """Count graphs by :attr:`Headroom.beats_default` (None: no labelled config, not counted)."""
    known = [room.beats_default for room in rooms if room is not None]
    return BeatsDefault(sum(1 for b in known if b), len(known),
                        sum(1 for b in known if b is None))


def log_se(label: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Standard error of log(label) from its 95% CI; NaN where unknown or unbounded."""
    label, low, high = (np.asarray(a, np.float64) for a in (label, low, high))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(high) - np.log(low)) / (2 * Z95)
    ok = np.isfinite(se) & (se >= 0) & (label > 0)
    return np.where(ok, se, np.nan)


def disjoint_pairs(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """bool [c, c]: the 95% CIs of i and j do not overlap (the orders the labels claim)."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    with np.errstate(invalid="ignore"):
        return (high[:, None] < low[None, :]) | (high[None, :] < low[:, None])


def shared_log_se(rows: pl.DataFrame) -> float:
    """SD (log scale) of the shift the default's own noise puts on every label of one timing
    batch: labels are ratios to the same default rounds, so their errors share it, and it
    cancels in the order of two non-default configs. The A/A control is a copy of the default
    timed like a config; its variance is the copy's plus the default's share, exchangeable, so
    half of it is the shared part. 0 unless the graph has exactly one control with a CI (one
    batch: configs of different batches share nothing)."""
    if "status" not in rows.columns or not set(LABEL_COLUMNS) <= set(rows.columns):
        return 0.0
    control = rows.filter((pl.col("status") == "control")
                          & pl.col("relative_ci_low").is_not_null()
                          & pl.col("relative_ci_high").is_not_null())
    if control.height != 1:
        return 0.0
    se = log_se(*(control[c].to_numpy() for c in LABEL_COLUMNS))[0]
    return float(se / math.sqrt(2.0)) if np.isfinite(se) else 0.0


def noise_ceiling(label: np.ndarray, low: np.ndarray, high: np.ndarray,
                  shared_se: float = 0.0) -> NoiseCeiling | None:
    """The expected τ between two reruns of these configs; None when no label has a CI.

    ``shared_se`` (:func:`shared_log_se`): the part of every label's error the configs share
    (the default's noise); it is taken out of the spread of a pair of two labels that both
    carry an error (not of a pair with the default itself, whose label is exactly 1), never
    below ``MIN_OWN_SHARE`` of it. Checked against real reruns: bench/bench_ceiling_reruns.py.

    ``label``/``low``/``high`` share one scale (ratios to the default or runtimes). Pairs where
    either standard error is unknown are left out; a pair with equal labels and zero error
    is a tie in both measurements and left out, as Kendall's τ-b does. Above
    ``MAX_CONFIGS`` labelled configs the mean is taken over the pairs of a seeded uniform
    sample of them (an unbiased estimate; ``pairs`` counts the pairs used)."""
    label = np.asarray(label, np.float64)
    se = log_se(label, low, high)
    known = np.flatnonzero(~np.isnan(se))
    if known.size == 0:
        return None
    if known.size > MAX_CONFIGS:      # pairs grow as c²: a seeded uniform sample of configs
        rng = np.random.default_rng([SAMPLE_SEED, known.size])
        known = np.sort(rng.choice(known, MAX_CONFIGS, replace=False))
    log_label, se = np.log(label[known]), se[known]
    low_k, high_k = np.asarray(low, np.float64)[known], np.asarray(high, np.float64)[known]
    total = sure_total = 0.0
    pairs = sure_pairs = 0
    for start in range(0, known.size, _BLOCK):
        rows = slice(start, min(start + _BLOCK, known.size))
        upper = np.arange(rows.start, rows.stop)[:, None] < np.arange(known.size)[None, :]
        diff = np.abs(log_label[rows, None] - log_label[None, :])
        both = se[rows, None] ** 2 + se[None, :] ** 2
        if shared_se > 0:
            own = both - np.where((se[rows, None] > 0) & (se[None, :] > 0),
                                  2 * shared_se ** 2, 0.0)
            both = np.maximum(own, MIN_OWN_SHARE * both)
        spread = np.sqrt(both)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(spread > 0, diff / spread, np.where(diff > 0, np.inf, np.nan))
        agree = (2 * ndtr(z) - 1) ** 2
        use = upper & ~np.isnan(agree)
        with np.errstate(invalid="ignore"):
            apart = ((high_k[rows, None] < low_k[None, :])
                     | (high_k[None, :] < low_k[rows, None]))
        sure = use & apart
        total += float(agree[use].sum())
        pairs += int(use.sum())
        sure_total += float(agree[sure].sum())
        sure_pairs += int(sure.sum())
    return NoiseCeiling(total / pairs if pairs else math.nan,
                        sure_total / sure_pairs if sure_pairs else math.nan, pairs, sure_pairs)


def headroom(ratio: np.ndarray, low: np.ndarray | None = None,
             high: np.ndarray | None = None) -> Headroom | None:
    """Headroom of one graph from its non-default labels (ratios to the default, CIs on the
    same scale or None); None without a positive label."""
    ratio = np.asarray(ratio, np.float64)
    keep = np.isfinite(ratio) & (ratio > 0)
    if not keep.any():
        return None
    values = ratio[keep]
    best = int(np.argmin(values))
    fastest_low = fastest_high = surely = None
    if low is not None and high is not None:
        lo, hi = np.asarray(low, np.float64)[keep], np.asarray(high, np.float64)[keep]
        if np.isfinite(lo[best]) and np.isfinite(hi[best]):
            fastest_low, fastest_high = float(lo[best]), float(hi[best])
        known = ~np.isnan(hi)
        if known.any():
            surely = float(np.mean(hi[known] < 1.0))
    p5, median, p95 = (float(v) for v in np.percentile(values, [5, 50, 95]))
    return Headroom(int(values.size), float(values[best]), fastest_low, fastest_high,
                    float(np.mean(values < 1.0)), surely, p5, median, p95)


LABEL_COLUMNS = ("relative_to_default", "relative_ci_low", "relative_ci_high")


def graph_label_stats(rows: pl.DataFrame) -> tuple[NoiseCeiling | None, Headroom | None]:
    """(noise ceiling, headroom) of one graph's configs-table rows.

    The ceiling covers every ok row with a label (the default included: it is ranked too);
    headroom the ok non-default rows. A table without CI columns has no ceiling."""
    if "relative_to_default" not in rows.columns:
        return None, None
    ok = rows.filter((pl.col("status") == "ok") & pl.col("relative_to_default").is_not_null())
    has_ci = {"relative_ci_low", "relative_ci_high"} <= set(ok.columns)
    label = ok["relative_to_default"].to_numpy().astype(np.float64)
    low = ok["relative_ci_low"].to_numpy().astype(np.float64) if has_ci else None
    high = ok["relative_ci_high"].to_numpy().astype(np.float64) if has_ci else None
    ceiling = (noise_ceiling(label, low, high, shared_log_se(rows))
               if low is not None and high is not None else None)
    default = ok["is_default"].fill_null(False).to_numpy() if "is_default" in ok.columns \
        else np.zeros(ok.height, bool)
    rest = ~default
    room = headroom(label[rest], low[rest] if low is not None else None,
                    high[rest] if high is not None else None)
    return ceiling, room
