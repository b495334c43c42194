"""One batch timed in several measurement processes: labels average them, CIs include their spread.

Loaded copies inside one process vary code placement, and their spread enters every CI
(paired.py). What all copies of a process share (the heap history that places input, output
and temporary buffers, the stack, the load order) does not vary inside it: independent reruns
of resnet18 and transformer spread ~0.46% and ~0.83% per config more than their CIs said, and
the default's own share of it moved every ratio of a run together (docs/benchmarks.md). So
every batch is timed in ``processes`` measurement processes (each with its share of the copies
and of the round and time caps); a label is the mean of their log-ratios, and its variance
adds the item's and the default's between-process variance, pooled over the graph's batches
(:class:`ProcessSpread`), with Satterthwaite's degrees of freedom for the CI.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from tpugraphs_tools.measure.timing import Timing
from tpugraphs_tools.measure.worker import CONTROL, OK, REPEAT, ConfigResult

TIMED = (OK, CONTROL, REPEAT)


@dataclass
class ProcessSpread:
    """A program's between-process variance τ² of log speed, pooled over a graph's batches.

    Item i in process p reads c_ip = μ_i + a_ip − b_p + e_ip − f_p: a_ip is the item's
    process effect and b_p the default's, e_ip the item's sampling noise and f_p the
    default's samples' (both shared by every item of the process). Programs are exchangeable
    (the A/A control's premise), so a and b have variance τ², and a round's log-ratio noise
    is half the config's and half the default's: a process's se² w splits into w/2 + w/2.
    Per batch of n items: the items' spread across processes after removing each process's
    mean over items is (τ² + w/2)(1 − 1/n), free of the default (τ² with (n − 1)(P − 1) df);
    the spread of those means is τ²(1 + 1/n) + w/2 + w/(2n), the default's own τ² with P − 1
    df (one draw of b: alone it would swing every CI of the graph). Pooled by df. Subtracting
    all of w from the items' spread (an earlier version) hid τ: it read 0 in 13 of 16
    benchmark runs while A/A controls failed 4 times in 16."""

    # (raw spread, the within-process noise expected in it, df) per estimate: τ² = raw − within
    items: list[tuple[float, float, int]] = field(default_factory=list)

    def add_batch(self, centers: Sequence[Sequence[float]], ses: Sequence[Sequence[float]]
                  ) -> None:
        """``centers[i][p]``, ``ses[i][p]``: item i's log-ratio and se in process p."""
        c = np.asarray(centers, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] < 2 or c.shape[1] < 2:
            return
        n, p = c.shape
        within = float(np.mean(np.square(ses)))
        means = c.mean(axis=0)
        residual = c - means
        self.items.append((float(np.mean(residual.var(axis=1, ddof=1))) / (1 - 1 / n),
                           within / 2, (n - 1) * (p - 1)))
        self.items.append((float(means.var(ddof=1)) / (1 + 1 / n), within / 2, p - 1))

    @property
    def variance(self) -> float:
        if not self.items:
            return 0.0
        return max(0.0, sum((raw - w) * d for raw, w, d in self.items) / max(1, self.df))

    @property
    def df(self) -> int:
        return sum(d for _, _, d in self.items)

    @property
    def effective_df(self) -> float:
        """Degrees of freedom of the τ² estimate: it is a spread minus the noise expected in
        it, so its relative error exceeds the spread's (Satterthwaite), the more so the
        smaller τ² is against that noise."""
        tau2 = self.variance
        if not self.items or tau2 <= 0:
            return float(max(1, self.df))
        noise = sum(w * d for _, w, d in self.items) / max(1, self.df)
        return max(1.0, self.df * (tau2 / (tau2 + noise)) ** 2)


def combined_interval(centers: Sequence[float], ses: Sequence[float], dfs: Sequence[int],
                      spread: ProcessSpread, confidence: float = 0.95
                      ) -> tuple[float, float, float]:
    """(mean log-ratio, its se, CI half-width) over processes: variance Σse²/P² + 2τ²/P (the
    item's and the default's process effects), t quantile with Satterthwaite's df (the within
    part with the processes' summed df, τ² with the pool's)."""
    p = len(centers)
    center = float(np.mean(centers))
    within = float(np.sum(np.square(ses))) / p ** 2
    between = 2 * spread.variance / p  # the item's process effects and the default's
    total = within + between
    if total <= 0:
        return center, 0.0, 0.0
    df_within = max(1, sum(dfs))
    parts = within ** 2 / df_within + (between ** 2 / spread.effective_df if between else 0.0)
    df = total ** 2 / parts if parts > 0 else float(df_within)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(total)
    return center, math.sqrt(total), half


def _key(result: ConfigResult) -> tuple[int | None, int | None, str]:
    return result.index, result.repeat_of, result.status if result.status == CONTROL else ""


def _samples(values: list[list[int] | None]) -> Timing | None:
    joined = [x for v in values if v for x in v]
    return Timing.of(joined) if joined else None


def combine(per_process: Sequence[Sequence[ConfigResult]], spread: ProcessSpread,
            confidence: float = 0.95) -> list[ConfigResult]:
    """One result per item of a batch from the same batch timed in each process (in the
    first process's order). An item timed in every process gets the combined label and adds
    to ``spread`` (before the labels are computed, so a batch's own items count); an item
    that failed somewhere keeps the first failure; one missing somewhere keeps what exists."""
    first, rest = per_process[0], per_process[1:]
    found = [{_key(r): r for r in results} for results in rest]
    groups = [[r, *(f[_key(r)] for f in found if _key(r) in f)] for r in first]
    timed = [g for g in groups if len(g) == len(per_process) and all(
        r.status in TIMED and r.log_se is not None and math.isfinite(r.log_se) for r in g)]
    spread.add_batch([[r.log_center or 0.0 for r in g] for g in timed],
                     [[r.log_se or 0.0 for r in g] for g in timed])
    out = []
    for g in groups:
        failed = [r for r in g if r.status not in TIMED]
        if failed:
            out.append(failed[0])
        elif any(g is t for t in timed):
            out.append(_merge(g, spread, confidence))
        else:
            out.append(g[0])
    return out


def _merge(group: list[ConfigResult], spread: ProcessSpread,
           confidence: float) -> ConfigResult:
    centers = [r.log_center or 0.0 for r in group]
    ses = [r.log_se or 0.0 for r in group]
    center, se, half = combined_interval(centers, ses, [r.df or 1 for r in group], spread,
                                         confidence)
    rounds = [r.rounds or 0 for r in group]
    return dataclasses.replace(
        group[0],
        relative_to_default=math.exp(center), relative_ci_low=math.exp(center - half),
        relative_ci_high=math.exp(center + half), rounds=sum(rounds),
        # The process that ran longest decided when the label was done.
        stop_reason=group[int(np.argmax(rounds))].stop_reason,
        timing=_samples([r.config_samples_ns for r in group]) or group[0].timing,
        default_timing=_samples([r.default_samples_ns for r in group]) or group[0].default_timing,
        timed_seconds=sum(r.timed_seconds or 0.0 for r in group),
        measure_seconds=sum(r.measure_seconds or 0.0 for r in group),
        paused_seconds=sum(r.paused_seconds for r in group),
        log_center=center, log_se=se, df=None,
        processes=len(group), process_sd=math.sqrt(spread.variance))
