"""Label uncertainty across timing windows, and how sure a graph's labels are.

A batch's CI covers the noise of its own window (rounds, loaded copies). Timing the same config
again in a later batch (a ``repeat`` row) showed the ratio moving by more than that: the machine
state differs between windows. The repeats of a graph give the variance between windows,
(its 80% upper confidence bound: a graph has few pairs) is added to every ok label's CI
(``window_sd``, log scale). A/A control rows are not
widened: identical programs share any window effect, so they keep testing the within-window
CI honestly.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from tpugraphs_tools.collect.rows import ConfigRow
from tpugraphs_tools.collect.summary import LabelQuality
from tpugraphs_tools.measure import CONTROL, OK, REPEAT, TRIM, ConfigResult, StopReason, Traits

EXTRA_STATUSES = (CONTROL, REPEAT)  # rows after the configs, never in the npz
WINDOW_CONFIDENCE = 0.8


def _t(rounds: int, confidence: float = 0.95) -> float | None:
    """The t quantile of one process's trimmed CI over ``rounds`` (Yuen's df)."""
    g = math.floor(TRIM * rounds)
    df = rounds - 2 * g - 1
    return float(stats.t.ppf(0.5 + confidence / 2, df)) if df >= 1 else None


def ci_quantile(low: float | None, high: float | None, log_se: float | None) -> float | None:
    """The t quantile a label's CI was built with: its log half-width over its log-scale se.

    One process's CI uses Yuen's df on its rounds, a label averaged over processes uses
    Satterthwaite's df (measure/stats/replicas.py) with ``rounds`` summed over them: only the
    engine's own se recovers the quantile for both."""
    if not low or not high or not log_se or not math.isfinite(high) or log_se <= 0:
        return None
    return (math.log(high) - math.log(low)) / 2 / log_se


def _bounded(low: float | None, high: float | None) -> tuple[float | None, float | None]:
    """A CI that bounds nothing ([0, inf]: a label stopped by its time budget after too few
    rounds for a t quantile) is stored as none: the label is kept, without a claim."""
    if low is None or high is None:
        return low, high
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
        return None, None
    return low, high


def measured_columns(result: ConfigResult, traits: Traits) -> dict[str, Any]:
    """The configs.parquet columns a measurement result fills, the same for layout and tile
    rows (``collect/layout.py``, ``collect/tile/labels.py``); the rest say what was tried.
    ``traits``: the engine's (ratio labels: the default's runtime in the row's window is
    its median there; fixed: its minimum timed alone)."""
    timing, default = result.timing, result.default_timing
    low, high = _bounded(result.relative_ci_low, result.relative_ci_high)
    return {
        "runtime_min_ns": timing.min_ns if timing else None,
        "runtime_median_ns": timing.median_ns if timing else None,
        "runtime_cv": timing.cv if timing else None,
        "repeats": timing.repeats if timing else None,
        "default_runtime_ns": (default.median_ns if traits.ratio_labels else default.min_ns)
        if default else None,
        "relative_to_default": result.relative_to_default,
        "relative_ci_low": low,
        "relative_ci_high": high,
        "rounds": result.rounds,
        "stop_reason": None if result.stop_reason is None else StopReason(result.stop_reason),
        "window_sd": None,
        "process_sd": result.process_sd,
        "runs_per_sample": result.runs_per_sample,
        "timing_cpus": result.timing_cpus,
        "timer": result.timer,
        "kernels_per_run": result.kernels_per_run,
        "timer_fallback": result.timer_fallback,
        "max_abs_error": result.max_abs_error,
        "compile_seconds": result.compile_seconds,
        "measure_seconds": result.measure_seconds,
        "error_message": result.error,
        "ci_t": ci_quantile(result.relative_ci_low, result.relative_ci_high, result.log_se),
    }


def _row_t(row: ConfigRow) -> float | None:
    """The quantile of the row's CI: as measured, else (rows of a journal written before
    it was kept, or read back from a dataset) Yuen's on ``rounds``, exact for one process."""
    kept = row.get("ci_t")
    if kept:
        return float(kept)
    rounds = row.get("rounds")
    return _t(rounds) if rounds else None


def _log_se(row: ConfigRow) -> float | None:
    """The row's standard error on the log scale, before any window widening."""
    low, high = row.get("relative_ci_low"), row.get("relative_ci_high")
    t = _row_t(row)
    if not low or not high or t is None or math.isinf(high):
        return None
    total = (math.log(high) - math.log(low)) / 2 / t
    applied = row.get("window_sd") or 0.0
    return math.sqrt(max(0.0, total ** 2 - applied ** 2))


def window_sd(rows: Sequence[ConfigRow], confidence: float = WINDOW_CONFIDENCE) -> float | None:
    """SD (log scale) between timing windows from repeat rows and their originals: the upper
    ``confidence`` bound of the variance (a graph has only a few pairs, and two that happen to
    agree must not shrink every CI to the within-window one). None without a usable pair."""
    by_index = {r["config_index"]: r for r in rows}
    terms = []
    for rep in rows:
        source = rep.get("duplicate_of")
        orig = by_index.get(source) if rep["status"] == REPEAT and source is not None else None
        if orig is None or orig["status"] != OK:
            continue
        ratio_r, ratio_o = rep.get("relative_to_default"), orig.get("relative_to_default")
        se_o, se_r = _log_se(orig), _log_se(rep)
        if not ratio_r or not ratio_o or se_o is None or se_r is None:
            continue
        d = math.log(ratio_r) - math.log(ratio_o)
        terms.append((d * d, se_o ** 2 + se_r ** 2))
    if not terms:
        return None
    # Σ d² / (2σ² + s̄) ~ χ²(n): σ² ≤ (Σ d² / χ²_{1-confidence}(n) − s̄) / 2.
    n = len(terms)
    total = sum(d2 for d2, _ in terms)
    within = statistics.fmean(s for _, s in terms)
    bound = total / float(stats.chi2.ppf(1 - confidence, n))
    return math.sqrt(max(0.0, (bound - within) / 2))


def widen_by_windows(rows: Sequence[ConfigRow]) -> tuple[list[ConfigRow], float | None]:
    """``rows`` with the between-window variance added to every ok non-default label's CI
    (idempotent: the previously applied ``window_sd`` is taken out first), and that SD."""
    sd = window_sd(rows)
    return [_widened(row, sd) for row in rows], sd


def _widened(row: ConfigRow, sd: float | None) -> ConfigRow:
    if row["status"] != OK or row["is_default"] or row.get("rounds") is None:
        return row
    se, t, ratio = _log_se(row), _row_t(row), row["relative_to_default"]
    if se is None or t is None or not ratio:
        return row
    half = t * math.sqrt(se ** 2 + (sd or 0.0) ** 2)
    center = math.log(ratio)
    if not math.isfinite(half) or not math.isfinite(math.exp(center + half)):
        return {**row, "relative_ci_low": None, "relative_ci_high": None}
    return {**row, "relative_ci_low": math.exp(center - half),
            "relative_ci_high": math.exp(center + half), "window_sd": sd or 0.0}


def separated_pairs(lows: Any, highs: Any) -> int:
    """Pairs of intervals that are disjoint (touching is not), in O(n log n): for each
    interval, the intervals starting above its end."""
    lows = np.sort(np.asarray(lows, dtype=np.float64))
    highs = np.asarray(highs, dtype=np.float64)
    return int((lows.size - np.searchsorted(lows, highs, side="right")).sum())


def _interval(row: ConfigRow) -> tuple[float, float, float] | None:
    """(ratio, CI low, CI high) of a labelled row, None for a row without a CI."""
    ratio, low, high = (row.get("relative_to_default"), row.get("relative_ci_low"),
                        row.get("relative_ci_high"))
    if ratio is None or low is None or high is None:
        return None
    return ratio, low, high


def label_quality(rows: Sequence[ConfigRow]) -> LabelQuality:
    """How sure the labels are: CI widths, stop reasons, windows, the A/A noise floor, and
    how many config pairs the CIs tell apart."""
    with_ci = [(r, ci) for r in rows if (ci := _interval(r)) is not None]
    ok = [(r, ci) for r, ci in with_ci if r["status"] == OK and not r["is_default"]]
    controls = [ci for r, ci in with_ci if r["status"] == CONTROL]
    labelled = [ci for r, ci in with_ci if r["status"] == OK]
    half = [(high - low) / 2 / ratio for _, (ratio, low, high) in ok if ratio]
    ratios = [ratio for ratio, _, _ in controls]
    spread = [(high - low) / 2 for _, low, high in controls]
    rounds = [n for r, _ in ok if (n := r["rounds"]) is not None]
    sds = [sd for r, _ in ok if (sd := r.get("process_sd")) is not None]
    return LabelQuality(
        ci_half_width_median=statistics.median(half) if half else None,
        stop_reasons=dict(Counter(r["stop_reason"] for r, _ in ok)),
        rounds_median=statistics.median(rounds) if rounds else None,
        window_sd=window_sd(rows),
        controls=len(controls),
        controls_holding_1=sum(1 for _, low, high in controls if low <= 1.0 <= high),
        # The A/A control's CI half-width: the smallest effect the batches could resolve.
        noise_floor=statistics.median(spread) if spread else None,
        control_range=(min(ratios), max(ratios)) if ratios else None,
        # Orders the labels claim: the default's CI is [1, 1] (the reference).
        pairs=len(labelled) * (len(labelled) - 1) // 2,
        pairs_separated=separated_pairs([low for _, low, _ in labelled],
                                        [high for _, _, high in labelled]),
        process_sd=statistics.median(sds) if sds else None,
    )


def finished_cis(rows: Iterable[ConfigRow]) -> list[tuple[float, float]]:
    """The CIs of the ok non-default labels measured so far (a measurer's ``context``: the
    paired engine stops a config once its CI is clear of its rank neighbours among them)."""
    return [(low, high) for r in rows
            if r["status"] == OK and not r["is_default"]
            and (low := r["relative_ci_low"]) is not None
            and (high := r["relative_ci_high"]) is not None]


def reference_row(row: ConfigRow, windows: list[int], reference: float) -> ConfigRow:
    """The default's own label: ratio 1 exactly, runtime = median of the in-window defaults."""
    mean = statistics.fmean(windows) if windows else 0.0
    cv = statistics.pstdev(windows) / mean if len(windows) > 1 and mean else 0.0
    return {**row, "relative_to_default": 1.0, "relative_ci_low": 1.0, "relative_ci_high": 1.0,
            "stop_reason": StopReason.REFERENCE, "default_runtime_ns": round(reference) or None,
            "runtime_median_ns": round(reference) or None,
            "runtime_min_ns": min(windows) if windows else None, "runtime_cv": cv,
            "repeats": len(windows), "rounds": None}
