"""One batch timed in several measurement processes: labels average them, CIs include their spread.

Loaded copies inside one process vary code placement, and their spread enters every CI
(paired.py). What all copies of a process share (the heap history that places input, output
and temporary buffers, the stack, the load order) does not vary inside it: independent reruns
of resnet18 and transformer spread ~0.46% and ~0.83% per config more than their CIs said, and
the default's own share of it moved every ratio of a run together (docs/benchmarks/history/). So
every batch is timed in ``processes`` measurement processes (each with its share of the copies
and of the round and time caps); a label is the mean of their log-ratios, and its variance
adds the item's and the default's between-process variance, pooled over the graph's batches
(:class:`ProcessSpread`), with Satterthwaite's degrees of freedom for the CI; in a tile
kernel, an item whose own processes disagree more than that gets its own spread
(``combined_interval``, ``item_spread``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from tpugraphs_tools.measure.results import CONTROL, OK, REPEAT, ConfigResult, Timer, Timing

TIMED = (OK, CONTROL, REPEAT)


# Fewest degrees of freedom at which the default's share is measured rather than taken to
# equal an item's own (ProcessSpread.default_variance): one batch timed in four processes, or
# three batches in two.
MIN_DEFAULT_DF = 3


@dataclass
class ProcessSpread:
    """Between-process variation of a graph's labels, pooled over its batches.

    Item i in process p reads c_ip = μ_i + u_ip − v_p: u_ip is the item's own deviation (its
    process effect a_ip and its part of the sampling noise), v_p the default's, shared by every
    item of the process (its process effect b_p and the common part of its samples' noise).
    A label, the mean over P processes, has variance (var u_i + var v)/P. Per batch of n
    items: the items' spread across processes after removing each process's mean over items
    estimates var u (1 − 1/n) with (n − 1)(P − 1) df, free of the default; the spread of those
    means estimates var v + var u / n with P − 1 df.

    The first versions took var v = var u (the default is a program like any other, and its
    share is one draw per process: alone it would swing every CI of the graph). Measured per
    process in ten sets of runs of four zoo programs (docs/benchmarks/history/), the default's
    share was 0.16–0.88 of an item's own variance (median a third), while the A/A control's
    own share was like any config's: every round's default sample enters all items, but each
    item's trimmed mean keeps its own 60% of the rounds, so most of the default's sampling
    noise is item-specific.
    So var v is measured once the pool has ``MIN_DEFAULT_DF`` for it, and taken equal to var
    u before. It is not capped at var u: resnet50@112 at 16 copies read it at 3.9× var u.
    τ² = var u − (half a process's se²), the item's process effect, is what ``process_sd``
    stores."""

    # per batch: (items' spread after removing process means, their mean se², df)
    own: list[tuple[float, float, int]] = field(default_factory=list)
    # per batch, in step with ``own``: (spread of the process means, items n, df)
    means: list[tuple[float, int, int]] = field(default_factory=list)

    def add_batch(self, centers: Sequence[Sequence[float]], ses: Sequence[Sequence[float]]
                  ) -> None:
        """``centers[i][p]``, ``ses[i][p]``: item i's log-ratio and se in process p."""
        c = np.asarray(centers, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] < 2 or c.shape[1] < 2:
            return
        n, p = c.shape
        means = c.mean(axis=0)
        spread = float(np.mean((c - means).var(axis=1, ddof=1))) / (1 - 1 / n)
        self.own.append((spread, float(np.mean(np.square(ses))), (n - 1) * (p - 1)))
        self.means.append((float(means.var(ddof=1)), n, p - 1))

    @property
    def own_df(self) -> int:
        return sum(d for _, _, d in self.own)

    @property
    def own_variance(self) -> float:
        """var u: an item's own between-process variance (process effect and sampling)."""
        return sum(s * d for s, _, d in self.own) / self.own_df if self.own else 0.0

    @property
    def noise(self) -> float:
        """A process's se², averaged like ``own_variance``."""
        return sum(w * d for _, w, d in self.own) / self.own_df if self.own else 0.0

    @property
    def default_df(self) -> int:
        return sum(d for _, _, d in self.means)

    @property
    def default_measured(self) -> bool:
        return self.default_df >= MIN_DEFAULT_DF

    @property
    def default_variance(self) -> float:
        """var v: the default's share, measured with enough df, else an item's own."""
        if not self.default_measured:
            return self.own_variance
        expected = sum(s / n * d for (s, _, _), (_, n, d) in zip(self.own, self.means,
                                                                strict=True))
        return max(0.0, self._means_spread() - expected / self.default_df)

    def _means_spread(self) -> float:
        return sum(m * d for m, _, d in self.means) / max(1, self.default_df)

    @property
    def variance(self) -> float:
        """τ²: a program's process effect (``process_sd`` stores τ): an item's own spread
        less half a process's se², pooled with the default's while that is not measured."""
        if not self.own:
            return 0.0
        if not self.default_measured:
            return self._exchangeable()[0] / 2
        return max(0.0, self.own_variance - self.noise / 2)

    @property
    def df(self) -> int:
        return self.own_df + self.default_df

    def between(self) -> tuple[float, float]:
        """(var u + var v − a process's se², its degrees of freedom): what the process
        effects add to a label's variance beyond the processes' own se² (times P), 0 if
        negative. var u is pooled with ``own_df``; a measured var v adds its own error (the
        means' spread, ``default_df``). Unmeasured, it is 2τ² (``_exchangeable``).

        Each graph's own: a floor of the spread pooled over a tile collection's earlier
        kernels (tried 2026-12-05/06) kept 98% of claimed orders in reruns against 97.4%
        without, but claimed 30% of pairs against 49% — kernels differ in how much they
        spread, so a pooled figure widened the quiet ones and narrowed the noisy ones
        (docs/benchmarks/history/2026-12-06-tile-rerun-spread.md)."""
        if not self.own:
            return 0.0, 1.0
        if not self.default_measured:
            return self._exchangeable()
        own, v = self.own_variance, self.default_variance
        extra = own + v - self.noise
        if extra <= 0:
            return 0.0, float(self.own_df)
        error = 2 * own ** 2 / self.own_df + 2 * self._means_spread() ** 2 / self.default_df
        return extra, max(1.0, 2 * extra ** 2 / error)

    def _exchangeable(self) -> tuple[float, float]:
        """2τ² with var v = var u: τ² pooled over the items' spread and the process means'
        (each less half a process's se²; a mean of n items carries (1 + 1/n) programs'
        draws), its df shrunk by (τ²/(τ² + noise))² (a spread less the noise in it)."""
        pool = [(s - w / 2, w / 2, d) for s, w, d in self.own]
        pool += [(m / (1 + 1 / n) - w / 2, w / 2, d) for (m, n, d), (_, w, _) in zip(
            self.means, self.own, strict=True)]
        df = sum(d for _, _, d in pool)
        tau2 = max(0.0, sum(t * d for t, _, d in pool) / df)
        if tau2 <= 0:
            return 0.0, float(df)
        noise = sum(w * d for _, w, d in pool) / df
        return 2 * tau2, max(1.0, df * (tau2 / (tau2 + noise)) ** 2)


def combined_interval(centers: Sequence[float], ses: Sequence[float], dfs: Sequence[int],
                      spread: ProcessSpread, confidence: float = 0.95, *,
                      item_spread: bool = False) -> tuple[float, float, float]:
    """(mean log-ratio, its se, CI half-width) over processes: variance Σse²/P² (the
    processes' own) + ``spread.between()``/P (the item's and the default's process effects),
    t quantile with Satterthwaite's df (the within part with the processes' summed df).

    With ``item_spread`` (tile kernels), unless the item's own processes (three or more)
    disagree more than that: its variance
    across them, less their mean se², then stands for the process term, with the t quantile
    of P − 1 df (with two processes, one df would make such a CI useless). Why:
    a config's process effect is not Gaussian. A 9 µs tile kernel ran ~1.8× slower in one,
    two or three of four processes and at its usual speed in the others (placement luck),
    and the next collection drew it differently; the spread pooled over a batch's items
    hid that. Recomputed on two pairs of resnet18 tiny tile collections, this kept 98.3% and
    98.7% of claimed orders (97.4% and 96.6% without) for 42.6% and 50.4% of pairs claimed
    (docs/benchmarks/history/2026-12-06-tile-rerun-spread.md). Whole programs (layout) do
    without: recomputed on two pairs each of resnet18 and bert tiny layout collections it
    claimed 25.8% / 28.0% of pairs instead of 28.4% / 37.9%, and all 175 claims made without
    it were kept (docs/benchmarks/history/2026-12-06-layout-item-spread.md)."""
    p = len(centers)
    center = float(np.mean(centers))
    within = float(np.sum(np.square(ses))) / p ** 2
    extra, extra_df = spread.between()
    if item_spread and p > 2:
        own = float(np.var(centers, ddof=1)) - float(np.mean(np.square(ses)))
        if own > extra:
            total = within + own / p
            half = float(stats.t.ppf(0.5 + confidence / 2, p - 1)) * math.sqrt(total)
            return center, math.sqrt(total), half
    between = extra / p
    total = within + between
    if total <= 0:
        return center, 0.0, 0.0
    df_within = max(1, sum(dfs))
    parts = within ** 2 / df_within + (between ** 2 / extra_df if between else 0.0)
    df = total ** 2 / parts if parts > 0 else float(df_within)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(total)
    return center, math.sqrt(total), half


def _key(result: ConfigResult) -> tuple[int | None, int | None, str]:
    return result.index, result.repeat_of, result.status if result.status == CONTROL else ""


def _samples(values: list[list[int] | None]) -> Timing | None:
    joined = [x for v in values if v for x in v]
    return Timing.of(joined) if joined else None


def _groups(per_process: Sequence[Sequence[ConfigResult]]
            ) -> tuple[list[list[ConfigResult]], list[list[ConfigResult]]]:
    """Each item's results over the processes (in the first process's order), and the groups
    of those timed with a finite se in every process."""
    first, rest = per_process[0], per_process[1:]
    found = [{_key(r): r for r in results} for results in rest]
    groups = [[r, *(f[_key(r)] for f in found if _key(r) in f)] for r in first]
    timed = [g for g in groups if len(g) == len(per_process) and all(
        r.status in TIMED and r.log_se is not None and math.isfinite(r.log_se) for r in g)]
    return groups, timed


def partial_between(per_process: Sequence[Sequence[ConfigResult]], spread: ProcessSpread
                    ) -> float | None:
    """The between-process variance of a label (``ProcessSpread.between``) from the processes
    that timed a batch so far, pooled with the graph's earlier batches (``spread`` is not
    changed); None before two processes have timed it. The next process's rounds stop once
    its own variance is small beside it (paired.StopRule.process_var)."""
    if len(per_process) < 2:
        return None
    _, timed = _groups(per_process)
    trial = ProcessSpread(own=list(spread.own), means=list(spread.means))
    trial.add_batch([[r.log_center or 0.0 for r in g] for g in timed],
                    [[r.log_se or 0.0 for r in g] for g in timed])
    if not trial.own:
        return None
    return trial.between()[0]


def combine(per_process: Sequence[Sequence[ConfigResult]], spread: ProcessSpread,
            confidence: float = 0.95, *, item_spread: bool = False) -> list[ConfigResult]:
    """One result per item of a batch from the same batch timed in each process (in the
    first process's order). An item timed in every process gets the combined label and adds
    to ``spread`` (before the labels are computed, so a batch's own items count); an item
    that failed somewhere keeps the first failure; one missing somewhere keeps what exists."""
    groups, timed = _groups(per_process)
    spread.add_batch([[r.log_center or 0.0 for r in g] for g in timed],
                     [[r.log_se or 0.0 for r in g] for g in timed])
    out = []
    for g in groups:
        failed = [r for r in g if r.status not in TIMED]
        if failed:
            out.append(failed[0])
        elif any(g is t for t in timed):
            out.append(_merge(g, spread, confidence, item_spread))
        else:
            out.append(g[0])
    return out


def _merge(group: list[ConfigResult], spread: ProcessSpread,
           confidence: float, item_spread: bool) -> ConfigResult:
    centers = [r.log_center or 0.0 for r in group]
    ses = [r.log_se or 0.0 for r in group]
    center, se, half = combined_interval(centers, ses, [r.df or 1 for r in group], spread,
                                         confidence, item_spread=item_spread)
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
        timing_cpus=min((r.timing_cpus for r in group if r.timing_cpus), default=None),
        timer=_one_timer(group),
        kernels_per_run=_common({r.kernels_per_run for r in group}),
        timer_fallback="; ".join(sorted({r.timer_fallback for r in group
                                         if r.timer_fallback})) or None,
        log_center=center, log_se=se, df=None,
        processes=len(group), process_sd=math.sqrt(spread.variance))


def _common(values: set[int | None]) -> int | None:
    """The processes' one kernel count per run; None where they disagree (or timed none)."""
    return values.pop() if len(values) == 1 else None


def _one_timer(group: list[ConfigResult]) -> str | None:
    """The processes' common timer; ``mixed`` when one fell back to another (validate warns)."""
    names = {r.timer for r in group if r.timer is not None}
    return names.pop() if len(names) == 1 else (Timer.MIXED.value if names else None)
