"""Paired timing: every config's sample sits next to default samples, labels are ratios with CIs.

A shared minimum of the default per batch moves every config of the batch together when that
one minimum is noisy (relative runtimes of 0.75–1.19 were seen timing the default against
copies of itself). Here each round runs ``D c1 c2 D c3 c4 D ...``: every config sample is
adjacent to a default sample, and its round's log-ratio is taken against the geometric mean of
the two defaults around its block, which cancels drift that is linear within a block. The label
is the 20%-trimmed mean of the per-round log-ratios with Yuen's t confidence interval (robust to
the occasional preempted sample, exact for symmetric noise). Rounds are added until every
config's CI is tight (``target_precision``) or already separates it from the default and its
rank neighbours, or a cap is hit; the reason is recorded (docs/layout-collection.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

TRIM = 0.2
BLOCK = 2  # config samples between two default samples

# Why a config stopped being timed (configs.parquet ``stop_reason``).
PRECISION, SEPARATED, MAX_ROUNDS, MAX_SECONDS, BATCH_DONE = (
    "precision", "separated", "max_rounds", "max_seconds", "batch_done")
FIXED = "fixed_rounds"


@dataclass(frozen=True)
class StopRule:
    """When a batch stops adding rounds (``tgt collect --target-precision`` and caps)."""

    target_precision: float = 0.01     # CI half-width relative to the ratio
    min_rounds: int = 8                # no CI is trusted before this many rounds
    max_rounds: int = 100
    max_seconds_per_config: float = 10.0
    confidence: float = 0.95
    # Stopping is looked at only every ×1.5 rounds, and separation needs this stricter CI:
    # checking a 95% CI every round would claim ~1 in 4 equal configs "different" somewhere
    # over 60 rounds (Bonferroni over the ~5 looks; measured ~3% on synthetic A/A batches).
    separation_confidence: float = 0.995
    look_growth: float = 1.5

    def is_look(self, rounds: int) -> bool:
        look = self.min_rounds
        while look < rounds:
            look = max(look + 1, math.ceil(look * self.look_growth))
        return look == rounds


@dataclass(frozen=True)
class Ratio:
    """A config's runtime relative to the default, with its confidence interval."""

    ratio: float
    low: float
    high: float
    rounds: int

    @property
    def half_width(self) -> float:
        """Half the CI width relative to the ratio (0.01 = ±1%)."""
        return (self.high - self.low) / 2 / self.ratio if self.ratio > 0 else math.inf

    def excludes(self, value: float) -> bool:
        return value < self.low or value > self.high

    def disjoint(self, other: tuple[float, float]) -> bool:
        return self.high < other[0] or self.low > other[1]


def trimmed_ci(values: Sequence[float], confidence: float = 0.95,
               trim: float = TRIM) -> tuple[float, float, float]:
    """(trimmed mean, low, high) of ``values`` by Yuen's method (winsorized variance, t with
    n − 2g − 1 degrees of freedom); fewer than 3 values give an infinite interval."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0:
        return math.nan, -math.inf, math.inf
    g = math.floor(trim * n)
    center = float(x[g:n - g].mean())
    h = n - 2 * g
    if n < 3 or h < 2:
        return center, -math.inf, math.inf
    w = x.copy()
    w[:g] = x[g]
    w[n - g:] = x[n - g - 1]
    sw2 = float(w.var(ddof=1))
    se = math.sqrt((n - 1) * sw2 / (h * (h - 1)))
    t = float(stats.t.ppf(0.5 + confidence / 2, h - 1))
    return center, center - t * se, center + t * se


def ratio_of(log_ratios: Sequence[float], confidence: float = 0.95) -> Ratio:
    center, low, high = trimmed_ci(log_ratios, confidence)
    return Ratio(math.exp(center), math.exp(low) if low > -math.inf else 0.0,
                 math.exp(high) if high < math.inf else math.inf, len(log_ratios))


@dataclass
class PairedBatch:
    """Per-run sample times (ns) and per-round log-ratios of one timed batch."""

    default_ns: list[float] = field(default_factory=list)
    config_ns: list[list[float]] = field(default_factory=list)
    log_ratios: list[list[float]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)   # timed seconds charged per config
    stop_reason: list[str | None] = field(default_factory=list)
    rounds: int = 0

    def ratio(self, i: int, confidence: float = 0.95) -> Ratio:
        return ratio_of(self.log_ratios[i], confidence)


def _neighbours_clear(i: int, estimates: list[Ratio], context: Sequence[tuple[float, float]],
                      control: set[int]) -> bool:
    """Config ``i``'s CI excludes 1.0 (the default) and the CIs ranked just below/above it."""
    mine = estimates[i]
    if not mine.excludes(1.0):
        return False
    others = [(r.ratio, (r.low, r.high)) for j, r in enumerate(estimates)
              if j != i and j not in control]
    others += [(math.sqrt(lo * hi) if lo > 0 else hi, (lo, hi)) for lo, hi in context]
    below = [o for o in others if o[0] <= mine.ratio]
    above = [o for o in others if o[0] > mine.ratio]
    near = ([max(below, key=lambda o: o[0])] if below else []) + \
           ([min(above, key=lambda o: o[0])] if above else [])
    return all(mine.disjoint(ci) for _, ci in near)


def time_paired(sample: Callable[[int], tuple[float, float]], count: int,
                rule: StopRule, context: Sequence[tuple[float, float]] = (),
                control: Sequence[int] = (), adaptive: bool = True) -> PairedBatch:
    """Time ``count`` configs against the default in paired rounds until ``rule`` stops them.

    ``sample(i)`` times one sample of the default (``i = -1``) or of config ``i`` and returns
    (ns per run, seconds the sample took). ``context`` holds the CIs of this graph's configs
    finished earlier (rank neighbours); ``control`` indices (A/A copies of the default) are
    timed every round while any other config is active and never stop a batch early.
    Without ``adaptive`` every config runs ``max_rounds`` (the fixed-rounds reference).
    """
    batch = PairedBatch(config_ns=[[] for _ in range(count)],
                        log_ratios=[[] for _ in range(count)], seconds=[0.0] * count,
                        stop_reason=[None] * count)
    controls = set(control)
    active = list(range(count))
    # Controls wait for the configs; in a control-only batch they are the configs.
    waiting = set() if controls >= set(active) else controls
    while active and any(i not in waiting for i in active):
        r = batch.rounds
        order = active[r % len(active):] + active[:r % len(active)]
        if r % 2:
            order.reverse()
        ns, secs = sample(-1)
        batch.default_ns.append(ns)
        before, before_s = ns, secs
        for start in range(0, len(order), BLOCK):
            block = order[start:start + BLOCK]
            timed = [(i, *sample(i)) for i in block]
            after, after_s = sample(-1)
            batch.default_ns.append(after)
            ref = 0.5 * (math.log(before) + math.log(after))
            share = (before_s + after_s) / 2 / len(block)
            for i, c_ns, c_s in timed:
                batch.config_ns[i].append(c_ns)
                batch.log_ratios[i].append(math.log(c_ns) - ref)
                batch.seconds[i] += c_s + share
            before, before_s = after, after_s
        batch.rounds += 1
        active = _still_active(batch, active, rule, context, waiting, controls, adaptive)
    for i in range(count):
        if batch.stop_reason[i] is None:
            batch.stop_reason[i] = BATCH_DONE
    return batch


def _still_active(batch: PairedBatch, active: list[int], rule: StopRule,
                  context: Sequence[tuple[float, float]], waiting: set[int],
                  controls: set[int], adaptive: bool) -> list[int]:
    look = adaptive and rule.is_look(batch.rounds)
    strict = [batch.ratio(i, rule.separation_confidence) if batch.log_ratios[i]
              else Ratio(1.0, 0.0, math.inf, 0) for i in range(len(batch.log_ratios))] \
        if look else []
    keep = []
    for i in active:
        reason = None
        if i in waiting:
            pass
        elif not adaptive:
            reason = FIXED if batch.rounds >= rule.max_rounds else None
        elif look and batch.ratio(i, rule.confidence).half_width <= rule.target_precision:
            reason = PRECISION
        elif look and i not in controls and _neighbours_clear(i, strict, context, controls):
            reason = SEPARATED
        elif batch.rounds >= rule.max_rounds:
            reason = MAX_ROUNDS
        elif batch.seconds[i] >= rule.max_seconds_per_config:
            reason = MAX_SECONDS
        if reason is None:
            keep.append(i)
        else:
            batch.stop_reason[i] = reason
    return keep


def calibrate(run: Callable[[], object], min_sample_ns: float, max_k: int = 100_000) -> int:
    """Runs per sample so one sample lasts ≥ ``min_sample_ns`` (from a few timed runs)."""
    times = []
    for _ in range(5):
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    one = max(1, sorted(times)[2])
    k = max(1, math.ceil(min_sample_ns / one))
    if k > 1:  # a second look with k runs: single runs overstate per-run cost (launch)
        start = time.perf_counter_ns()
        for _ in range(k):
            run()
        per = max(1, (time.perf_counter_ns() - start) / k)
        k = max(k, math.ceil(min_sample_ns / per))
    return min(k, max_k)


def timed_sample(run: Callable[[], object], k: int) -> tuple[float, float]:
    """(ns per run, seconds) of ``k`` back-to-back runs."""
    start = time.perf_counter_ns()
    for _ in range(k):
        run()
    total = time.perf_counter_ns() - start
    return total / k, total / 1e9
