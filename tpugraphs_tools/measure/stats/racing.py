"""Racing and a per-graph timing budget for the paired engine (``--race``,
``--budget-seconds``; both opt-in. The budget is benchmarked on resnet18 tiny only, racing
not yet: docs/timing.md).

**Racing.** Without it, the paired engine asks whether a config is separated only at its
×1.5 looks (``StopRule.is_look``), so a config that parted from its neighbours at round 420
still runs to the look at round 617. With racing the question is asked after every round: a
config whose CI is apart from 1.0 (the default) and from the CIs ranked just below and above
it (this batch's configs and ``context``, the graph's earlier batches) stops at once
(``separated``), even short of the precision target; its rounds leave the batch, so the
configs still overlapping get the rounds sooner (and, under a budget, the seconds).

Two things keep such an early stop honest:

- No race before ``stopping.race_start``: every loaded copy timed ``MIN_ROUNDS_PER_COPY``
  times. Before that the copies' placement spread is not measured, the CI leaves it out and is
  too narrow.
- A stricter CI for the early stop. Asking after every round gives noise many chances to part
  two equal configs, and a fixed level per look (the ×1.5 looks' 99.5%) lets the error add
  up with every look. Racing's CI is a *confidence sequence* instead: it is
  :func:`race_z` standard errors wide at round n (Robbins' normal-mixture boundary,
  ρ = n₀), which a mean of equal configs crosses at any round at all with probability at most
  α = 1 − ``StopRule.confidence`` (5%). A union bound over the looks (Bonferroni) would hold
  too, but successive rounds share almost all their data, so it would demand ~4 SE by round
  100 and stop later than the ×1.5 looks do; the mixture boundary is ~3.1–3.7 SE from n₀ to
  thousands of rounds. On synthetic A/A batches (tests/measure/test_racing.py) racing
  stopped about as many equal configs as the ×1.5 looks (7 of 400 each at 60 rounds, 5 vs 4
  of 200 at 200 rounds) and stopped separating configs 5–10% sooner.

**Budget.** ``budget_seconds`` caps a batch's timed seconds (the samples of every item and the
default's, as ``PairedBatch.seconds`` counts them). The parent process splits a graph's budget
over its batches (:func:`budget_share`: by configs, unspent seconds carried to later batches);
each measurement process gets a share, like the other caps. Within a batch, the configs whose 95%
CI still overlaps 1.0 or a neighbour's come first: once the seconds left would not pay for the
rounds those still need (:func:`seconds_needed`), the settled configs stop (``budget``). When
the seconds are gone the rest stop too (``budget``). No config stops on the budget before
``min_rounds``: below that it has no CI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tpugraphs_tools.measure.stats.stopping import Ratio


def race_z(alpha: float, rounds: int, start: int) -> float:
    """How many standard errors a CI that may stop a config at round ``rounds`` spans: the
    normal-mixture boundary √((n+ρ)/n · ln((n+ρ)/(ρα²))) with ρ = ``start``. A mean crosses
    it at *some* round with probability ≤ ``alpha`` (Robbins' mixture martingale), however
    many rounds are looked at."""
    n = max(rounds, start, 1)
    rho = max(start, 1)
    return math.sqrt((n + rho) / n * math.log((n + rho) / (rho * alpha ** 2)))


def race_confidence(alpha: float, rounds: int, start: int) -> float:
    """The confidence of a normal CI :func:`race_z` standard errors wide."""
    return math.erf(race_z(alpha, rounds, start) / math.sqrt(2))


def neighbours_clear(i: int, estimates: Sequence[Ratio], context: Sequence[tuple[float, float]],
                     control: set[int]) -> bool:
    """Config ``i``'s CI excludes 1.0 (the default) and the CIs ranked just below/above it
    (controls are not ranked; ``context`` holds CIs of the graph's earlier batches)."""
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


def rounds_to_width(half_width: float, rounds: int, target: float) -> float:
    """Rounds still needed for a CI of ``half_width`` after ``rounds`` rounds to narrow to
    ``target`` (width ∝ 1/√rounds); infinite without a CI yet."""
    if not math.isfinite(half_width) or target <= 0:
        return math.inf
    return rounds * max(0.0, (half_width / target) ** 2 - 1.0)


def seconds_needed(rounds_needed: Sequence[float], costs: Sequence[float],
                   per_round: float) -> float:
    """Seconds the batch needs for configs still needing ``rounds_needed`` rounds, each costing
    ``costs`` seconds a round, plus ``per_round`` seconds a round for what every round times
    (A/A control, repeats): the rounds run until the slowest to narrow is done."""
    if not rounds_needed:
        return 0.0
    return max(rounds_needed) * (sum(costs) + per_round)


def budget_share(budget: float | None, spent: float, batch_configs: int,
                 later_configs: int) -> float | None:
    """A batch's seconds of a graph's ``budget`` (None: no budget) of which ``spent`` are
    spent: its share by configs of the configs not yet timed, so unspent seconds carry over
    and a graph's last batch gets all that is left."""
    if budget is None:
        return None
    total = batch_configs + later_configs
    return max(0.0, budget - spent) * (batch_configs / total if total > 0 else 1.0)
