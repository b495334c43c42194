"""Ranking metrics of the TpuGraphs paper and the Kaggle competition, per graph.

Conventions (tested in tests/baseline/test_metrics.py):
- ``y`` is the measured runtime (lower is better); ``pred`` a predicted cost (lower = predicted
  faster). Only the order of ``pred`` matters.
- OPA counts pairs with ``y_i < y_j``; a pair is right when ``pred_i < pred_j`` (a tie in
  ``pred`` is wrong, as in tpu_graphs' metric). No such pair → NaN.
- Kendall τ is ``scipy.stats.kendalltau`` (τ-b, ties handled); NaN when undefined.
- The model's top-k are the k lowest ``pred`` (ties broken by config index); k larger than the
  number of configs means all of them.
- ``kendall_tau_sure`` (tgt datasets with label CIs only): Kendall's τ over the pairs whose
  label 95% CIs are disjoint, ``(concordant − discordant) / pairs``, a tie in ``pred`` counting
  as neither: a ranking is not rewarded or punished for pairs the labels cannot order.
- NaNs are skipped when averaging over graphs; the count of defined values is reported.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
from scipy import stats

TOP_KS = (1, 5, 10)


def opa(y: np.ndarray, pred: np.ndarray) -> float:
    """Ordered pair accuracy: share of strictly ordered runtime pairs the prediction orders."""
    y = np.asarray(y, dtype=np.float64)
    pred = np.asarray(pred, dtype=np.float64)
    lower = y[:, None] < y[None, :]
    total = int(lower.sum())
    if total == 0:
        return math.nan
    right = lower & (pred[:, None] < pred[None, :])
    return float(right.sum() / total)


def kendall_tau(y: np.ndarray, pred: np.ndarray) -> float:
    if len(y) < 2:
        return math.nan
    with warnings.catch_warnings():  # constant input → NaN is the documented answer
        warnings.simplefilter("ignore")
        tau = stats.kendalltau(np.asarray(y, np.float64), np.asarray(pred, np.float64)).statistic
    return float(tau)


def sure_pairs(ci: np.ndarray) -> np.ndarray:
    """bool [c, c]: the label CIs (``ci`` [c, 2] low/high, NaN unknown) of i and j are
    disjoint."""
    low, high = ci[:, 0], ci[:, 1]
    with np.errstate(invalid="ignore"):
        return (high[:, None] < low[None, :]) | (high[None, :] < low[:, None])


def kendall_tau_sure(y: np.ndarray, pred: np.ndarray, ci: np.ndarray) -> float:
    """Kendall's τ restricted to the pairs whose label CIs are disjoint; NaN without any."""
    sure = np.triu(sure_pairs(np.asarray(ci, np.float64)), k=1)
    count = int(sure.sum())
    if count == 0:
        return math.nan
    y = np.asarray(y, np.float64)
    pred = np.asarray(pred, np.float64)
    agree = np.sign(y[:, None] - y[None, :]) * np.sign(pred[:, None] - pred[None, :])
    return float(agree[sure].sum() / count)


def top_k(pred: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k lowest predictions (stable: ties go to the lower config index)."""
    return np.argsort(np.asarray(pred), kind="stable")[:max(1, k)]


def slowdown(y: np.ndarray, pred: np.ndarray, k: int) -> float:
    """Best runtime among the model's top-k over the best runtime (1.0 = found the best)."""
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return math.nan
    best = y.min()
    if best <= 0:
        return math.nan
    return float(y[top_k(pred, k)].min() / best)


def kaggle_tile_score(y: np.ndarray, pred: np.ndarray, k: int = 5) -> float:
    """Kaggle "Fast or Slow?" tile score ``2 − min(y over top-5) / min(y)`` (1.0 is perfect)."""
    return 2.0 - slowdown(y, pred, k)


def top_k_error(y: np.ndarray, pred: np.ndarray, k: int) -> float:
    """Paper's top-K error ``(min runtime in top-K − best) / best`` (0.0 is perfect)."""
    return slowdown(y, pred, k) - 1.0


def graph_metrics(y: np.ndarray, pred: np.ndarray,
                  ci: np.ndarray | None = None) -> dict[str, float]:
    """Every metric of one graph; undefined ones are NaN. ``ci`` [c, 2]: the labels' CIs
    (adds ``kendall_tau_sure``)."""
    out = {"kendall_tau": kendall_tau(y, pred), "opa": opa(y, pred),
           "kaggle_tile_score": kaggle_tile_score(y, pred)}
    if ci is not None:
        out["kendall_tau_sure"] = kendall_tau_sure(y, pred, ci)
    for k in TOP_KS:
        out[f"slowdown@{k}"] = slowdown(y, pred, k)
        out[f"top{k}_error"] = top_k_error(y, pred, k)
    return out


def mean_metrics(per_graph: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """NaN-skipping mean per metric plus ``graphs`` and ``<metric>_n`` (defined values)."""
    rows = list(per_graph)
    out: dict[str, float] = {"graphs": float(len(rows))}
    if not rows:
        return out
    keys = list(dict.fromkeys(k for r in rows for k in r))  # a metric some graphs lack
    for key in keys:
        values = np.array([r.get(key, math.nan) for r in rows], dtype=np.float64)
        defined = values[~np.isnan(values)]
        out[key] = float(defined.mean()) if defined.size else math.nan
        out[f"{key}_n"] = float(defined.size)
    return out
