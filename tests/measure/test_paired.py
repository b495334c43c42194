"""The paired engine's statistics and stopping rules on synthetic timings (no real timing)."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from tpugraphs_tools.measure.engines.sampling import timed_sample
from tpugraphs_tools.measure.stats.robust import Placement, trimmed_stats
from tpugraphs_tools.measure.stats.rounds import (
    BATCH_DONE,
    MAX_ROUNDS,
    MAX_SECONDS,
    PLACEMENT_FLOOR,
    PRECISION,
    SEPARATED,
    PairedBatch,
    time_paired,
)
from tpugraphs_tools.measure.stats.stopping import StopRule


def t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """(trimmed mean, low, high) from ``trimmed_stats``: the CI from the rounds alone."""
    from scipy import stats

    center, se, df = trimmed_stats(values)
    t = float(stats.t.ppf(0.5 + confidence / 2, df)) if df else math.inf
    return center, center - t * se, center + t * se


def fake_sampler(ratios: list[float], noise: float, seed: int = 0, base_ns: float = 1e6,
                 outliers: float = 0.0, placement: float = 0.0):
    """``sample(i, copy)`` of configs whose true runtime is ``ratios[i]`` × the default's, with
    lognormal noise of ``noise`` per sample, slow drift, occasional 3× preempted samples and a
    persistent speed offset of SD ``placement`` per loaded copy of each program."""
    rng = np.random.default_rng(seed)
    calls = [0]
    offsets: dict[tuple[int, int], float] = {}

    def sample(i: int, copy: int = 0) -> tuple[float, float]:
        calls[0] += 1
        drift = 1 + 0.2 * math.sin(calls[0] / 50)  # the machine slows down and recovers
        if (i, copy) not in offsets:
            offsets[(i, copy)] = math.exp(rng.normal(0, placement)) if placement else 1.0
        true = base_ns * (1.0 if i < 0 else ratios[i]) * drift * offsets[(i, copy)]
        ns = true * math.exp(rng.normal(0, noise))
        if outliers and rng.random() < outliers:
            ns *= 3
        return ns, ns * 5 / 1e9

    return sample, calls


def test_trimmed_stats_without_trimming_are_the_mean_and_its_standard_error():
    x = np.random.default_rng(1).normal(0.3, 0.05, 40)
    center, se, df = trimmed_stats(x, trim=0.0)
    assert center == pytest.approx(x.mean())
    assert se == pytest.approx(x.std(ddof=1) / math.sqrt(40))
    assert df == 39
    # Too few values: no standard error is claimed.
    assert trimmed_stats([0.1, 0.2])[1:] == (math.inf, 0)


def test_a_batch_ratio_from_too_few_rounds_claims_no_interval():
    batch = PairedBatch(log_ratios=[[0.1, 0.2]], copy_of=[[0, 0]])
    r = batch.ratio(0)
    assert (r.low, r.high, r.rounds) == (0.0, math.inf, 2)


@pytest.mark.parametrize("true", [0.8, 1.0, 1.07, 1.5])
def test_ratio_ci_covers_known_ratio_about_95_percent(true):
    """The label's CI (``PairedBatch.ratio``, one copy: no placement term) covers the truth."""
    rng = np.random.default_rng(int(true * 100))
    covered = 0
    for _ in range(400):
        logs = np.log(true) + rng.normal(0, 0.04, 20)
        r = PairedBatch(log_ratios=[list(logs)], copy_of=[[0] * 20]).ratio(0)
        covered += r.low <= true <= r.high
        assert r.low <= r.ratio <= r.high
    assert 0.91 <= covered / 400 <= 0.99


def test_paired_rounds_recover_known_ratios_despite_drift_and_outliers():
    ratios = [0.7, 1.0, 1.25, 1.0]
    sample, _ = fake_sampler(ratios, noise=0.02, outliers=0.05, seed=3)
    rule = StopRule(target_precision=0.005, max_rounds=40, max_seconds_per_config=1e9)
    batch = time_paired(sample, len(ratios), rule, control=[3])
    for i, true in enumerate(ratios):
        r = batch.ratio(i)
        assert r.low <= true <= r.high, (i, r)
        assert r.ratio == pytest.approx(true, rel=0.03)


def test_large_effect_stops_early_no_effect_runs_to_the_cap():
    sample, _ = fake_sampler([0.5, 1.0, 1.0], noise=0.05, seed=5)
    rule = StopRule(target_precision=0.001, min_rounds=6, max_rounds=30,
                    max_seconds_per_config=1e9)
    batch = time_paired(sample, 3, rule, control=[2])
    assert batch.stop_reason[0] == SEPARATED and len(batch.log_ratios[0]) == rule.min_rounds
    assert batch.stop_reason[1] == MAX_ROUNDS and len(batch.log_ratios[1]) == 30
    # The control is timed every round the batch runs and says why it ended.
    assert batch.stop_reason[2] == BATCH_DONE and len(batch.log_ratios[2]) == 30
    assert batch.ratio(2).low <= 1.0 <= batch.ratio(2).high


def test_precision_target_and_seconds_cap():
    quiet, _ = fake_sampler([1.0, 1.0], noise=0.001, seed=7)
    batch = time_paired(quiet, 2, StopRule(target_precision=0.01, max_seconds_per_config=1e9),
                        control=[1])
    assert batch.stop_reason[0] == PRECISION and batch.rounds == StopRule.min_rounds
    noisy, _ = fake_sampler([1.0, 1.0], noise=0.2, seed=7)
    batch = time_paired(noisy, 2, StopRule(max_rounds=1000, max_seconds_per_config=0.2),
                        control=[1])
    assert batch.stop_reason[0] == MAX_SECONDS and batch.seconds[0] >= 0.2
    assert batch.rounds < 1000


def test_neighbour_overlap_keeps_a_config_running():
    """Excluding the default is not enough: a config whose CI overlaps a finished config
    ranked next to it keeps adding rounds."""
    sample, _ = fake_sampler([0.6], noise=0.05, seed=9)
    rule = StopRule(target_precision=0.0001, max_rounds=12, max_seconds_per_config=1e9)
    alone = time_paired(sample, 1, rule)
    assert alone.stop_reason[0] == SEPARATED
    sample, _ = fake_sampler([0.6], noise=0.05, seed=9)
    crowded = time_paired(sample, 1, rule, context=[(0.55, 0.65)])
    assert crowded.stop_reason[0] == MAX_ROUNDS


def test_every_round_times_the_default_and_each_config_once_in_varying_order():
    order: list[tuple[int, int]] = []

    def sample(i: int, copy: int) -> tuple[float, float]:
        order.append((i, copy))
        return 1e6, 0.001

    rounds = 24
    time_paired(sample, 5, StopRule(max_rounds=rounds, min_rounds=4, loaded_copies=4), control=[4],
                adaptive=False)
    assert len(order) == rounds * 6
    blocks = [order[r * 6:(r + 1) * 6] for r in range(rounds)]
    positions = []
    for r, block in enumerate(blocks):
        assert sorted(i for i, _ in block) == [-1, 0, 1, 2, 3, 4]
        assert {c for _, c in block} == {r % 4}  # one copy index per round, for every program
        positions.append([i for i, _ in block].index(-1))
    # The default takes every position, like any config: no program is always next to it.
    assert len(set(positions)) >= 4


def test_without_adaptive_rounds_a_config_stops_at_a_cap_and_says_which():
    """What stopped it: the round cap (max_rounds) or the time cap (max_seconds). Earlier
    versions wrote ``fixed_rounds`` here, a name of the other engine."""
    sample, _ = fake_sampler([1.0, 1.2], noise=0.01)
    batch = time_paired(sample, 2, StopRule(max_rounds=12, min_rounds=4), adaptive=False)
    assert batch.rounds == 12 and batch.stop_reason == [MAX_ROUNDS, MAX_ROUNDS]

    def slow(i: int, copy: int) -> tuple[float, float]:
        return 1e6, 0.3 if i == 1 else 0.001

    batch = time_paired(slow, 2, StopRule(max_rounds=12, min_rounds=4,
                                          max_seconds_per_config=1.0), adaptive=False)
    assert batch.stop_reason == [MAX_ROUNDS, MAX_SECONDS]


def test_the_seed_sets_the_round_order_so_reruns_can_differ():
    def orders(seed: int | None) -> list[int]:
        seen: list[int] = []

        def sample(i: int, copy: int) -> tuple[float, float]:
            seen.append(i)
            return 1e6, 0.001

        time_paired(sample, 4, StopRule(max_rounds=10, min_rounds=4, loaded_copies=2),
                    adaptive=False, seed=seed)
        return seen

    assert orders(1) == orders(1) and orders(None) == orders(None)
    assert len({tuple(orders(seed)) for seed in range(5)}) == 5


def test_a_recency_effect_does_not_bias_the_aa_control():
    """A program run again soon is faster (its code and buffers still in cache). The default
    is sampled exactly as often as the A/A control, in shuffled rounds, so the control's CI
    still holds 1.0 (sampling the default between every two configs made it look 0.7–1.5%
    slower than its own copy on resnet18)."""
    rule = StopRule(target_precision=0.0, max_rounds=60, max_seconds_per_config=1e9)
    held = total = 0
    def recency_sampler(seed: int):
        rng = np.random.default_rng(seed)
        history: list[int] = []

        def sample(i: int, copy: int) -> tuple[float, float]:
            recent = i in history[-3:]
            history.append(i)
            ns = 1e6 * (1.0 if recent else 1.03) * math.exp(rng.normal(0, 0.01))
            return ns, ns / 1e9

        return sample

    for seed in range(60):
        batch = time_paired(recency_sampler(seed), 5, rule, control=[4], adaptive=False)
        r = batch.ratio(4)
        held += r.low <= 1.0 <= r.high
        total += 1
    assert held / total >= 0.9


def test_repeated_looks_rarely_claim_a_difference_between_equal_configs():
    """Adaptive stopping looks at the CI many times: equal configs must still rarely be
    declared 'separated' (the A/A control's promise)."""
    rule = StopRule(target_precision=0.0, max_rounds=40, max_seconds_per_config=1e9)
    claims = 0
    for seed in range(300):
        sample, _ = fake_sampler([1.0], noise=0.03, seed=100 + seed)
        claims += time_paired(sample, 1, rule).stop_reason[0] == SEPARATED
    assert claims / 300 <= 0.05


def test_placement_spread_between_loaded_copies_enters_the_ci():
    """Identical programs loaded twice run at different speeds: with a 1.5% per-copy offset,
    A/A CIs from the rounds alone would exclude 1.0 far too often; pooled copy spread fixes it."""
    rule = StopRule(target_precision=0.0, max_rounds=40, max_seconds_per_config=1e9,
                    loaded_copies=4)
    held = naive_held = total = 0
    for seed in range(40):
        placement = Placement()
        sample, _ = fake_sampler([1.0] * 4, noise=0.01, seed=500 + seed, placement=0.015)
        batch = time_paired(sample, 4, rule, control=[3], placement=placement, adaptive=False)
        for i in range(4):
            r = batch.ratio(i)
            held += r.low <= 1.0 <= r.high
            _, low, high = t_interval(batch.log_ratios[i])
            naive_held += low <= 0.0 <= high
            total += 1
    assert held / total >= 0.9
    assert naive_held / total < 0.7  # the effect the copies are there for
    assert placement.variance() > 0


def test_the_default_is_sampled_once_a_round_because_trimming_needs_symmetry():
    """Why not sample the shared default √n times a round (Dunnett's allocation)? A round
    value log c − mean(log d₁…d_m) keeps the config's slow preempted samples whole and dilutes
    the default's, so it is right-skewed, and a trimmed mean of a skewed value is below its
    mean: equal programs read ~1% fast. Tried on resnet18 tiny (m = 4): A/A controls read
    0.985, 0.990 and 0.997 and every ratio moved down about 1%. With one default sample a
    round the value is a difference of exchangeable samples, symmetric, and unbiased."""
    rng = np.random.default_rng(21)

    def samples(shape: tuple[int, ...]) -> np.ndarray:
        logs = rng.normal(0, 0.05, shape)
        return logs + np.log(3) * (rng.random(shape) < 0.05)  # 5% preempted: 3× slower

    bias = {}
    for m in (1, 4):
        centers = [trimmed_stats(samples((200,)) - samples((200, m)).mean(axis=1))[0]
                   for _ in range(200)]
        bias[m] = float(np.mean(centers))
    assert abs(bias[1]) < 0.002
    assert bias[4] < -0.006


def test_overlapping_rank_neighbours_go_on_to_the_rank_precision():
    """Configs 0.4% apart meet a 2% target long before their CIs part: with a rank precision
    they keep going (time goes where ranks are uncertain); a config far from the rest and from
    the default stops as before."""
    ratios = [1.0, 1.004, 1.3]

    def run(rank: float | None):
        sample, _ = fake_sampler(ratios, noise=0.02, seed=11)
        rule = StopRule(target_precision=0.02, rank_precision=rank, max_rounds=3000,
                        max_seconds_per_config=1e9)
        return time_paired(sample, 3, rule)

    plain, ranked = run(None), run(0.004)
    assert plain.stop_reason[:2] == [PRECISION, PRECISION]
    assert ranked.stop_reason[:2] == [PRECISION, PRECISION]
    for i in (0, 1):
        assert len(ranked.log_ratios[i]) > 4 * len(plain.log_ratios[i])
        assert ranked.ratio(i).half_width <= 0.004 < plain.ratio(i).half_width
    assert plain.stop_reason[2] == ranked.stop_reason[2] == PRECISION
    assert len(ranked.log_ratios[2]) == len(plain.log_ratios[2])


def test_a_sample_is_primed_by_prime_runs_untimed_runs_only_when_it_has_several():
    calls: list[int] = []

    def run() -> None:
        calls.append(1)

    for k, prime, expected in [(3, 1, 4), (3, 0, 3), (3, 2, 5), (1, 1, 1)]:
        calls.clear()
        ns, seconds = timed_sample(run, k, prime)
        assert len(calls) == expected, (k, prime)
        assert ns >= 0 and seconds >= 0


def test_rounds_stop_once_the_spread_between_processes_dominates_the_ci():
    """Round noise SD 0.1: without a known between-process variance a config runs to the cap
    for a 0.1% target; told that the processes spread 0.02 (log SD), it stops where its own
    variance is a quarter of that, and its CI from the rounds is still its own."""
    sample, _ = fake_sampler([1.0, 1.01, 1.0], noise=0.1, seed=11)
    rule = StopRule(target_precision=0.001, max_rounds=3000, max_seconds_per_config=1e9,
                    loaded_copies=2)
    capped = time_paired(sample, 3, rule, control=[2], seed=1)
    assert capped.stop_reason[0] == MAX_ROUNDS and capped.rounds == 3000
    sample, _ = fake_sampler([1.0, 1.01, 1.0], noise=0.1, seed=11)
    floored = time_paired(sample, 3, replace(rule, process_var=0.02 ** 2), control=[2],
                          seed=1)
    assert floored.stop_reason[0] == PLACEMENT_FLOOR
    assert floored.rounds < 3000 / 4
    _, se2, place, _ = floored.parts(0)
    assert se2 + place <= rule.floor_share * 0.02 ** 2
    # Where the processes agree (a tiny spread), the rounds go on.
    sample, _ = fake_sampler([1.0, 1.01, 1.0], noise=0.1, seed=11)
    agree = time_paired(sample, 3, replace(rule, process_var=1e-9), control=[2], seed=1)
    assert agree.stop_reason[0] == MAX_ROUNDS


def test_the_precision_target_is_checked_between_the_separation_looks():
    rule = StopRule()
    checks = [n for n in range(rule.min_rounds, 2000) if rule.is_check(n)]
    looks = [n for n in range(rule.min_rounds, 2000) if rule.is_look(n)]
    assert set(looks) <= set(checks)
    assert all(b <= math.ceil(a * rule.check_growth) + 1 for a, b in itertools.pairwise(checks))
    # A config that reaches the target stops at the first check after it, not the next look.
    sample, _ = fake_sampler([1.0, 1.0], noise=0.05, seed=3)
    batch = time_paired(sample, 2, StopRule(target_precision=0.01, max_rounds=5000,
                                            max_seconds_per_config=1e9), control=[1], seed=2)
    stop = len(batch.log_ratios[0])
    assert batch.stop_reason[0] == PRECISION and rule.is_check(stop)
    assert not rule.is_look(stop)  # 188 rounds: the looks alone would have run to 210
    assert batch.ratio(0).half_width <= 0.01
