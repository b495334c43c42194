"""Racing and the per-graph timing budget on synthetic timings (measure/stats/racing.py; no jax)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.measure import MeasureOptions
from tpugraphs_tools.measure.sessions import stop_rule
from tpugraphs_tools.measure.stats.racing import budget_share, race_z
from tpugraphs_tools.measure.stats.robust import Placement
from tpugraphs_tools.measure.stats.rounds import BUDGET, MAX_ROUNDS, SEPARATED, time_paired
from tpugraphs_tools.measure.stats.stopping import MIN_ROUNDS_PER_COPY, StopRule, race_start


def sampler(ratios: list[float], noise: float, seed: int, placement: float = 0.004):
    """``sample(i, copy)`` of configs ``ratios[i]`` × the default's runtime: lognormal noise of
    ``noise`` per sample and a persistent offset of SD ``placement`` per loaded copy."""
    rng = np.random.default_rng(seed)
    offsets: dict[tuple[int, int], float] = {}

    def sample(i: int, copy: int) -> tuple[float, float]:
        if (i, copy) not in offsets:
            offsets[(i, copy)] = math.exp(rng.normal(0, placement))
        ns = 1e6 * (1.0 if i < 0 else ratios[i]) * offsets[(i, copy)]
        ns *= math.exp(rng.normal(0, noise))
        return ns, ns * 5 / 1e9  # 5 runs a sample

    return sample


def rule(**kw: object) -> StopRule:
    base: dict[str, object] = dict(target_precision=0.0, max_rounds=200, loaded_copies=4,
                                   max_seconds_per_config=1e9)
    return StopRule(**{**base, **kw})  # type: ignore[arg-type]


def test_the_race_boundary_holds_over_every_look():
    """A mean of equal configs must cross racing's boundary at *any* round rarely: random
    walks of 2,000 standard normal rounds, looked at after each one from n₀ on."""
    rng = np.random.default_rng(0)
    start, alpha, rounds = 20, 0.05, 2000
    n = np.arange(1, rounds + 1)
    z = np.array([race_z(alpha, int(k), start) for k in n])
    crossed = 0
    for _ in range(4):  # 4 × 500 walks, to keep memory small
        walks = np.cumsum(rng.normal(size=(500, rounds)), axis=1) / np.sqrt(n)
        crossed += int((np.abs(walks[:, start - 1:]) > z[start - 1:]).any(axis=1).sum())
    assert crossed / 2000 <= alpha
    # A per-look 95% CI looked at every round would cross most of the time.
    assert z.min() > 2.5 and race_z(alpha, 100, start) < 3.2


def test_racing_waits_until_every_loaded_copy_was_timed_enough():
    """Before every copy has ``MIN_ROUNDS_PER_COPY`` rounds the placement spread is not in the
    CI; the ×1.5 looks stop a clear config at ``min_rounds``, racing not before that."""
    far = rule(loaded_copies=4, race=True)
    assert far.race_start == race_start(far.min_rounds, 4, MIN_ROUNDS_PER_COPY) == 20
    raced = time_paired(sampler([0.5, 1.0], 0.03, 1), 2, far, control=[1])
    looked = time_paired(sampler([0.5, 1.0], 0.03, 1), 2, rule(loaded_copies=4), control=[1])
    assert raced.stop_reason[0] == looked.stop_reason[0] == SEPARATED
    assert len(raced.log_ratios[0]) == 20 and len(looked.log_ratios[0]) == far.min_rounds


def test_a_settled_config_stops_between_looks_and_its_ci_covers_the_truth():
    """A config 8% from the default and 5% from its neighbour stops at the first round its
    sequence-valid CI parts from theirs, short of the precision target and the caps; without
    racing it waits for a ×1.5 look. Its CI still covers the true ratio."""
    ratios, noise = [0.92, 0.97, 1.0], 0.05
    raced_rounds, looked_rounds, separated, covered, runs = [], [], 0, 0, 40
    for seed in range(runs):
        raced = time_paired(sampler(ratios, noise, seed), 3, rule(race=True), control=[2])
        looked = time_paired(sampler(ratios, noise, seed), 3, rule(), control=[2])
        separated += raced.stop_reason[0] == SEPARATED
        raced_rounds.append(len(raced.log_ratios[0]))
        looked_rounds.append(len(looked.log_ratios[0]))
        r = raced.ratio(0)
        covered += r.low <= ratios[0] <= r.high
    assert separated >= 0.9 * runs  # long before the round cap (200)
    # Stops land on any round, not only on the looks 8, 12, 18, 27, 41, 62, 93, 140.
    assert len(set(raced_rounds) - {8, 12, 18, 27, 41, 62, 93, 140}) >= runs // 2
    assert np.mean(raced_rounds) < np.mean(looked_rounds)  # 86 vs 95 rounds
    assert covered / runs >= 0.9


def test_configs_a_fifth_of_a_percent_apart_keep_running_while_a_far_one_stops():
    """Two configs 0.2% apart overlap to the end: racing stops neither (they run to the cap);
    a config far from both and from the default stops, and its rounds leave the batch."""
    ratios = [0.8, 1.1, 1.102, 1.0]
    for seed in range(5):
        batch = time_paired(sampler(ratios, 0.02, seed), 4, rule(race=True, max_rounds=120),
                            control=[3])
        assert batch.stop_reason[:3] == [SEPARATED, MAX_ROUNDS, MAX_ROUNDS]
        assert len(batch.log_ratios[0]) == 20
        assert len(batch.log_ratios[1]) == len(batch.log_ratios[2]) == 120
        assert batch.seconds[0] < batch.seconds[1] / 4


def test_racing_declares_equal_configs_apart_no_more_often_than_the_looks_do():
    """200 seeded A/A batches (a config equal to the default, and the control): how often the
    config stops as separated, and how often its final 95% CI excludes 1.0 (a claimed
    difference), with and without racing."""
    batches = 200
    stopped = {False: 0, True: 0}
    claimed = {False: 0, True: 0}
    for race in (False, True):
        for seed in range(batches):
            batch = time_paired(sampler([1.0, 1.0], 0.05, 1000 + seed), 2,
                                rule(race=race, max_rounds=60, loaded_copies=2), control=[1],
                                placement=Placement())
            stopped[race] += batch.stop_reason[0] == SEPARATED
            claimed[race] += batch.ratio(0).excludes(1.0)
    # Nominal 5%, plus two binomial SDs at 200 batches (1.5 points).
    assert claimed[True] / batches <= 0.05 + 0.03
    assert stopped[True] / batches <= 0.05
    assert stopped[True] <= stopped[False] + 4 and claimed[True] <= claimed[False] + 4


def test_the_budget_stops_every_config_once_spent():
    """Configs overlapping each other to the end run until the batch's seconds are gone:
    every one stops with ``budget``, after ``min_rounds`` at least, within one round of it."""
    ratios = [1.0, 1.002, 1.004, 1.0]
    budget = 0.6  # seconds; a round costs ~4 × 5 ms here
    batch = time_paired(sampler(ratios, 0.02, 3), 4, rule(budget_seconds=budget),
                        control=[3])
    assert batch.stop_reason[:3] == [BUDGET] * 3
    assert sum(batch.seconds) >= budget
    assert sum(batch.seconds) - budget <= 1.5 * sum(batch.seconds) / batch.rounds
    assert batch.rounds >= StopRule.min_rounds
    # A budget smaller than one round still gives every config its first CI.
    tiny = time_paired(sampler(ratios, 0.02, 3), 4, rule(budget_seconds=0.0), control=[3])
    assert tiny.rounds == StopRule.min_rounds and tiny.stop_reason[0] == BUDGET


def test_the_budget_goes_to_overlapping_configs_first():
    """A config whose 95% CI is already apart (not yet at the stricter separation) stops for
    the budget as soon as the seconds left cannot pay for the overlapping pair's rounds; the
    pair gets them and runs on to the end of the budget."""
    ratios, budget = [0.955, 1.0, 1.002, 1.0], 2.0
    settled_first = 0
    for seed in range(10):
        batch = time_paired(sampler(ratios, 0.05, 200 + seed), 4,
                            rule(budget_seconds=budget), control=[3])
        assert batch.stop_reason == [BUDGET, BUDGET, BUDGET, "batch_done"]
        settled, pair = len(batch.log_ratios[0]), len(batch.log_ratios[1])
        # Rounds the budget buys when every item runs every round.
        even = budget / sum(s / len(x)
                            for s, x in zip(batch.seconds, batch.log_ratios, strict=True))
        if settled < pair:
            settled_first += 1
            assert pair > 1.05 * even
    assert settled_first >= 8


def test_a_graph_budget_is_shared_over_batches_and_processes():
    """By configs, unspent seconds carried to later batches; each process gets its share."""
    assert budget_share(None, 0.0, 16, 16) is None
    assert budget_share(100.0, 0.0, 16, 24) == pytest.approx(40.0)
    assert budget_share(100.0, 30.0, 16, 8) == pytest.approx(70.0 * 16 / 24)
    assert budget_share(100.0, 90.0, 8, 0) == pytest.approx(10.0)
    assert budget_share(100.0, 120.0, 8, 0) == 0.0
    opts = MeasureOptions(budget_seconds=60.0, measure_processes=4, race=True)
    assert stop_rule(opts).budget_seconds == pytest.approx(15.0) and stop_rule(opts).race
    assert stop_rule(MeasureOptions()).budget_seconds is None
    assert not stop_rule(MeasureOptions()).race


def test_race_and_budget_are_plan_keys_checked_like_flags():
    opts = MeasureOptions.from_keys({"race": True, "budget_seconds": 30})
    assert opts.race and opts.budget_seconds == 30
    with pytest.raises(ValueError, match="race must be true or false"):
        MeasureOptions.from_keys({"race": "yes"})
    with pytest.raises(ValueError, match="budget_seconds must be >= 0"):
        MeasureOptions.from_keys({"budget_seconds": -1.0})


def test_collect_help_shows_race_and_budget_under_expert_timing():
    text = CliRunner().invoke(main, ["collect", "--help"]).output
    expert = text.index("Timing (expert):")
    for flag in (r"--race / --no-race", r"--budget-seconds FLOAT"):
        line = re.search(rf"^ +{flag}", text, re.MULTILINE)
        assert line is not None and line.start() > expert, flag
    assert "[default: no-race]" in text
