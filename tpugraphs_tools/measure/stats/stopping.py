"""When the paired engine stops timing a config: the stopping rule, and a config's ratio to
the default with its confidence interval.

Apart from the rounds (``rounds.py``) because the messages between processes carry a
:class:`StopRule` and racing and budgets read :class:`Ratio`s: everything here is plain
records and arithmetic, and it imports nothing else of ``measure/``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# A copy's mean log-ratio is trusted from this many rounds on: below it the spread between
# copies makes a wild estimate (copy_spread), so the placement floor waits for every copy to
# have been timed this often.
MIN_ROUNDS_PER_COPY = 5


def race_start(min_rounds: int, copies: int, per_copy: int) -> int:
    """The first round racing may stop a config at: every copy timed ``per_copy`` times (round r
    times copy r mod ``copies``), and never before ``min_rounds``."""
    return max(min_rounds, per_copy * max(1, copies))


@dataclass(frozen=True)
class StopRule:
    """When a batch stops adding rounds (``tgt collect --target-precision`` and caps)."""

    # CI half-width relative to the ratio. At 1% resnet18 tiny told 18% of its config pairs
    # apart, at 0.7% 27% (docs/benchmarks/history/2026-12-02-label-reproducibility.md).
    target_precision: float = 0.007
    min_rounds: int = 8                # no CI is trusted before this many rounds
    max_rounds: int = 6000
    max_seconds_per_config: float = 10.0
    confidence: float = 0.95
    # Stopping is looked at only every ×1.5 rounds, and separation needs this stricter CI:
    # checking a 95% CI every round would claim ~1 in 4 equal configs "different" somewhere
    # over 60 rounds (Bonferroni over the ~5 looks; measured ~3% on synthetic A/A batches).
    separation_confidence: float = 0.995
    look_growth: float = 1.5
    # The precision target and the floors are checked more often (every ×1.1 rounds): they
    # stop on the CI's width, not on where it lies, so looking often claims nothing more.
    # At ×1.5 a config that met the target just after a look ran on a further 25% of its
    # rounds on average.
    check_growth: float = 1.1
    # Identical programs loaded twice run at persistently different speeds (code and buffer
    # placement: up to ±1.3% between 4-copy means of resnet18), so the default and every
    # config are loaded ``loaded_copies`` times and round r times copy r mod ``loaded_copies``
    # of each; the spread between copies enters every CI, and rounds stop once it dominates
    # ("placement_floor").
    loaded_copies: int = 8
    floor_share: float = 0.25
    # A config whose 95% CI meets the target but still overlaps the CI of a config ranked next
    # to it (or 1.0, the default) keeps going to this half-width: time goes where ranks are
    # uncertain. None: the target alone.
    rank_precision: float | None = None
    # Opt-in (measure/stats/racing.py; only the budget is benchmarked, on resnet18 tiny).
    # ``race``: separation is asked after
    # every round from ``race_start`` on, on a confidence sequence (valid over all looks),
    # instead of at the looks. ``budget_seconds``: timed seconds this batch may spend (the
    # parent's share of the graph's budget); None: no budget.
    race: bool = False
    budget_seconds: float | None = None
    # The between-process variance of a label measured by the processes that timed this batch
    # before (Batch.process_var); None: unknown. A config whose own variance here is within
    # ``floor_share`` of it stops (``placement_floor``): a label averages P processes, so
    # rounds in one process shrink only the first part of Σse²/P² + var/P.
    process_var: float | None = None

    @property
    def race_start(self) -> int:
        return race_start(self.min_rounds, self.loaded_copies, MIN_ROUNDS_PER_COPY)

    def is_look(self, rounds: int) -> bool:
        """Separation is asked at these rounds (×``look_growth`` apart)."""
        return _on_schedule(rounds, self.min_rounds, self.look_growth)

    def is_check(self, rounds: int) -> bool:
        """The precision target and the floors are asked at these rounds (×``check_growth``
        apart, and at the looks)."""
        return (_on_schedule(rounds, self.min_rounds, self.check_growth)
                or self.is_look(rounds))


def _on_schedule(rounds: int, start: int, growth: float) -> bool:
    look = start
    while look < rounds:
        look = max(look + 1, math.ceil(look * growth))
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
