"""Paired timing: every round times the default and each config once, labels are ratios with CIs.

A shared minimum of the default per batch moves every config of the batch together when that
one minimum is noisy (relative runtimes of 0.75–1.19 were seen timing the default against
copies of itself). Here every round is a block: the default, each active config and the A/A
control are each sampled once, in a fresh random order, and a config's round value is its
log-ratio to that round's default sample. The label is the 20%-trimmed mean of those values
with Yuen's t confidence interval (robust to the occasional preempted sample), plus the
spread between loaded copies. The default is sampled exactly like a config (same number of
copies, same share of positions), so an A/A control is exchangeable with the default and a
fair test of every CI (an order that samples the default between every two configs is not,
nor is sampling it √n times a round: tests/measure/test_paired.py). Rounds are added until
every config's CI is tight (``target_precision``; ``rank_precision`` while its CI still
overlaps a rank neighbour's) or already separates it from the default and its rank
neighbours, or a cap is hit (the rule: ``stopping.py``); the reason is recorded.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scipy import stats

from tpugraphs_tools.measure.results import StopReason
from tpugraphs_tools.measure.stats.racing import (
    neighbours_clear,
    race_confidence,
    rounds_to_width,
    seconds_needed,
)
from tpugraphs_tools.measure.stats.robust import Placement, copy_spread, trimmed_stats
from tpugraphs_tools.measure.stats.stopping import MIN_ROUNDS_PER_COPY, Ratio, StopRule

# Why a config stopped being timed (configs.parquet ``stop_reason``; one enum, results.py).
PRECISION, SEPARATED, MAX_ROUNDS, MAX_SECONDS, BATCH_DONE, PLACEMENT_FLOOR = (
    StopReason.PRECISION, StopReason.SEPARATED, StopReason.MAX_ROUNDS, StopReason.MAX_SECONDS,
    StopReason.BATCH_DONE, StopReason.PLACEMENT_FLOOR)
BUDGET = StopReason.BUDGET
# (rounds done, configs still timed): a batch's progress for a watcher (round_board.py)
OnRound = Callable[[int, int], None]


@dataclass
class PairedBatch:
    """Per-run sample times (ns) and per-round log-ratios of one timed batch."""

    default_ns: list[float] = field(default_factory=list)
    config_ns: list[list[float]] = field(default_factory=list)
    log_ratios: list[list[float]] = field(default_factory=list)
    copy_of: list[list[int]] = field(default_factory=list)  # which loaded copy, per round
    seconds: list[float] = field(default_factory=list)   # timed seconds charged per config
    stop_reason: list[str | None] = field(default_factory=list)
    rounds: int = 0
    placement_var: float = 0.0   # pooled variance between copy pairs' mean log-ratios

    def spread(self, i: int) -> tuple[float, float] | None:
        return copy_spread(self.log_ratios[i], self.copy_of[i])

    def parts(self, i: int) -> tuple[float, float, float, int]:
        """(center, round se², placement variance of the estimate, df) of config ``i``.

        Round r pairs copy r mod n of the config with copy r mod n of the default, so the
        spread between copy-pair means holds both sides' placement; averaging over the copies
        used divides it by their number."""
        center, se, df = trimmed_stats(self.log_ratios[i])
        copies = len(set(self.copy_of[i])) or 1
        return center, se ** 2, self.placement_var / copies, df

    def ratio(self, i: int, confidence: float = 0.95) -> Ratio:
        center, se2, place, df = self.parts(i)
        if not df or math.isinf(se2):
            return Ratio(math.exp(center) if math.isfinite(center) else 1.0, 0.0, math.inf,
                         len(self.log_ratios[i]))
        half = _t_quantile(0.5 + confidence / 2, df) * math.sqrt(se2 + place)
        return Ratio(math.exp(center), math.exp(center - half), math.exp(center + half),
                     len(self.log_ratios[i]))


@functools.lru_cache(maxsize=4096)
def _t_quantile(p: float, df: int) -> float:
    """Student's t quantile, cached: racing and budgets ask for every config every round."""
    return float(stats.t.ppf(p, df))


def time_paired(sample: Callable[[int, int], tuple[float, float]], count: int,
                rule: StopRule, context: Sequence[tuple[float, float]] = (),
                control: Sequence[int] = (), adaptive: bool = True,
                placement: Placement | None = None, seed: int | None = None,
                on_round: OnRound | None = None) -> PairedBatch:
    """Time ``count`` configs against the default in rounds until ``rule`` stops them.

    ``sample(i, copy)`` times one sample of loaded copy ``copy`` of the default (``i = -1``) or
    of config ``i`` and returns (ns per run, seconds the sample took); every program has
    ``rule.loaded_copies`` copies and round r uses copy r mod that of each. A round samples
    the default and every active config once, in a random order from ``seed`` (the measurement
    worker draws a fresh one per batch, so reruns are independent replicates of the order; None
    derives it from the batch's size, for reproducible tests). ``context`` holds the CIs of this
    graph's configs finished earlier (rank neighbours); ``control`` indices (A/A copies of the
    default, configs re-timed from earlier batches) are timed every round while any other config
    is active and never stop a batch early. ``placement`` pools the between-copy spread across
    the batches of a graph (it is updated here). Without ``adaptive`` every config runs to the
    caps (``max_rounds`` or ``max_seconds_per_config``), with no early stop. ``on_round``
    hears (rounds done, configs still timed; controls not counted) before the first round and
    after each (round_board.py: a watcher's progress).
    """
    placement = placement if placement is not None else Placement()
    batch = PairedBatch(config_ns=[[] for _ in range(count)],
                        log_ratios=[[] for _ in range(count)],
                        copy_of=[[] for _ in range(count)], seconds=[0.0] * count,
                        stop_reason=[None] * count)
    copies = max(1, rule.loaded_copies)
    shuffle = random.Random(count * 1009 + len(context) if seed is None else seed)
    controls = set(control)
    active = list(range(count))
    # Controls wait for the configs; in a control-only batch they are the configs.
    waiting = set() if controls >= set(active) else controls
    report = on_round or _no_report
    report(0, sum(1 for i in active if i not in waiting))

    while active and any(i not in waiting for i in active):
        r = batch.rounds
        copy = r % copies
        order = [-1, *active]
        shuffle.shuffle(order)
        timed = {i: sample(i, copy) for i in order}
        default_ns, default_s = timed.pop(-1)
        batch.default_ns.append(default_ns)
        share = default_s / len(timed)  # the default's sample is paid for by the round
        for i, (ns, secs) in timed.items():
            batch.config_ns[i].append(ns)
            batch.log_ratios[i].append(math.log(ns) - math.log(default_ns))
            batch.copy_of[i].append(copy)
            batch.seconds[i] += secs + share
        batch.rounds += 1
        if _decides(batch.rounds, rule, adaptive):
            batch.placement_var = placement.variance(_spreads(batch))
        active = _still_active(batch, active, rule, context, waiting, controls, adaptive)
        report(batch.rounds, sum(1 for i in active if i not in waiting))
    for i in range(count):
        if batch.stop_reason[i] is None:
            batch.stop_reason[i] = BATCH_DONE
    current = _spreads(batch)
    batch.placement_var = placement.variance(current)
    placement.items.extend(current)
    return batch


def _no_report(_rounds: int, _active: int) -> None:
    """``on_round`` of a batch nobody watches."""


def _spreads(batch: PairedBatch) -> list[tuple[float, float]]:
    return [x for x in (batch.spread(i) for i in range(len(batch.log_ratios))) if x is not None]


def _decides(rounds: int, rule: StopRule, adaptive: bool) -> bool:
    """Whether the stopping rule reads the CIs after this round: the placement spread (a pass
    over every config's samples) is recomputed only then. Done every round it cost ~3 s of
    Python per measurement process on a 13-item batch of 1,100 rounds."""
    if not adaptive:
        return False
    return (rule.is_check(rounds) or (rule.race and rounds >= rule.race_start)
            or rule.budget_seconds is not None)


def _still_active(batch: PairedBatch, active: list[int], rule: StopRule,
                  context: Sequence[tuple[float, float]], waiting: set[int],
                  controls: set[int], adaptive: bool) -> list[int]:
    look = adaptive and rule.is_look(batch.rounds)
    check = adaptive and rule.is_check(batch.rounds)
    racing = adaptive and rule.race and batch.rounds >= rule.race_start

    def estimates(confidence: float) -> list[Ratio]:
        return [batch.ratio(i, confidence) if batch.log_ratios[i]
                else Ratio(1.0, 0.0, math.inf, 0) for i in range(len(batch.log_ratios))]

    # Separation: after every round when racing (a confidence sequence), else at the looks.
    strict = (estimates(race_confidence(1 - rule.confidence, batch.rounds, rule.race_start))
              if racing
              else estimates(rule.separation_confidence) if look and not rule.race else [])
    budgeted = adaptive and rule.budget_seconds is not None
    usual = estimates(rule.confidence) if check or budgeted else []
    finer = rule.rank_precision if rule.rank_precision is not None else rule.target_precision
    keep = []
    for i in active:
        reason = None
        if i in waiting:
            pass
        elif not adaptive:  # the caps only: no early stop
            reason = MAX_ROUNDS if batch.rounds >= rule.max_rounds else \
                MAX_SECONDS if batch.seconds[i] >= rule.max_seconds_per_config else None
        elif check and _precise_enough(i, usual, finer, rule.target_precision, context,
                                       controls):
            reason = PRECISION
        elif strict and i not in controls and neighbours_clear(i, strict, context, controls):
            reason = SEPARATED
        elif (check and batch.rounds >= MIN_ROUNDS_PER_COPY * rule.loaded_copies
              and _floor_reached(batch, i, rule)):
            reason = PLACEMENT_FLOOR
        elif batch.rounds >= rule.max_rounds:
            reason = MAX_ROUNDS
        elif batch.seconds[i] >= rule.max_seconds_per_config:
            reason = MAX_SECONDS
        if reason is None:
            keep.append(i)
        else:
            batch.stop_reason[i] = reason
    if budgeted and batch.rounds >= rule.min_rounds:
        for i in _over_budget(batch, keep, rule, usual, finer, context, waiting, controls):
            batch.stop_reason[i] = BUDGET
            keep.remove(i)
    return keep


def _over_budget(batch: PairedBatch, active: list[int], rule: StopRule, usual: list[Ratio],
                 finer: float, context: Sequence[tuple[float, float]], waiting: set[int],
                 controls: set[int]) -> list[int]:
    """Configs the budget stops now: all once the seconds are spent; before that the settled
    ones (95% CI apart from 1.0 and the neighbours) as soon as the seconds left would not pay
    for the rounds the overlapping ones still need (measure/stats/racing.py)."""
    assert rule.budget_seconds is not None
    left = rule.budget_seconds - sum(batch.seconds)
    timed = [i for i in active if i not in waiting]
    if left <= 0:
        return timed
    settled = [i for i in timed
               if i not in controls and neighbours_clear(i, usual, context, controls)]
    open_ = [i for i in timed if i not in settled]
    if not settled or not open_:
        return []

    def cost(i: int) -> float:  # seconds a round of item i costs (its share of the default's)
        return batch.seconds[i] / max(1, len(batch.log_ratios[i]))

    need = [min(rounds_to_width(usual[i].half_width, usual[i].rounds, finer),
                rule.max_rounds - batch.rounds,
                (rule.max_seconds_per_config - batch.seconds[i]) / max(cost(i), 1e-12))
            for i in open_]
    overhead = sum(cost(i) for i in active if i in waiting)
    return settled if seconds_needed(need, [cost(i) for i in open_], overhead) > left else []


def _precise_enough(i: int, estimates: list[Ratio], finer: float, target: float,
                    context: Sequence[tuple[float, float]], controls: set[int]) -> bool:
    """Config ``i``'s CI is within ``target``, and within ``finer`` unless it already excludes
    1.0 and its rank neighbours' CIs (controls are not ranked)."""
    width = estimates[i].half_width
    return width <= finer or (width <= target and (
        i in controls or neighbours_clear(i, estimates, context, controls)))


def _floor_reached(batch: PairedBatch, i: int, rule: StopRule) -> bool:
    """More rounds cannot tighten the CI much: the copies' placement spread dominates it, or
    the spread between measurement processes (``rule.process_var``) does."""
    _, se2, place, _ = batch.parts(i)
    if place > 0 and se2 <= rule.floor_share * place:
        return True
    between = rule.process_var
    return between is not None and between > 0 and se2 + place <= rule.floor_share * between
