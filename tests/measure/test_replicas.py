"""One batch timed in several measurement processes: combined labels and their CIs (synthetic)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tpugraphs_tools.measure import CONTROL, OK, REPEAT, MeasureOptions
from tpugraphs_tools.measure.results import RUNTIME_ERROR, ConfigResult, Timing
from tpugraphs_tools.measure.stats.replicas import ProcessSpread, combine, combined_interval


def _result(index: int | None, center: float, se: float, status: str = OK,
            repeat_of: int | None = None, rounds: int = 100,
            samples: tuple[int, ...] = (10, 12)) -> ConfigResult:
    return ConfigResult(index, status, repeat_of=repeat_of,
                        relative_to_default=math.exp(center), relative_ci_low=0.0,
                        relative_ci_high=9.0, rounds=rounds, stop_reason="precision",
                        log_center=center, log_se=se, df=rounds - 41,
                        timing=Timing.of(list(samples)), config_samples_ns=list(samples),
                        default_samples_ns=[11], timed_seconds=1.0, measure_seconds=2.0)


def test_without_a_spread_between_processes_the_label_is_the_mean_with_pooled_se():
    center, se, half = combined_interval([0.10, 0.12], [0.01, 0.02], [200, 200],
                                         ProcessSpread())
    assert center == pytest.approx(0.11)
    assert se == pytest.approx(math.sqrt(0.01 ** 2 + 0.02 ** 2) / 2)
    assert half == pytest.approx(1.966 * se, rel=1e-3)  # t with 400 df


def _batch(rng: np.random.Generator, truth: np.ndarray, tau: float, se: float,
           processes: int = 2, default_shift: np.ndarray | None = None) -> np.ndarray:
    """Item × process log-ratios: each program (every item and the default) has its own speed
    offset of SD ``tau`` in each process; the default's moves every item of the process."""
    n = truth.size
    items = rng.normal(0, tau, (n, processes))
    default = rng.normal(0, tau, processes) if default_shift is None else default_shift
    # Half of a process's se is the item's own sampling noise, half the default's samples'
    # (shared by every item of the process, as the paired rounds share the default sample).
    noise = rng.normal(0, se / math.sqrt(2), (n, processes)) \
        + rng.normal(0, se / math.sqrt(2), processes)[None, :]
    return truth[:, None] + items - default[None, :] + noise


def test_the_pooled_spread_recovers_a_known_between_process_variance():
    rng = np.random.default_rng(0)
    spread = ProcessSpread()
    tau, se = 0.02, 0.01
    for _ in range(300):
        truth = rng.normal(0, 0.1, 12)
        spread.add_batch(_batch(rng, truth, tau, se).tolist(), np.full((12, 2), se).tolist())
    assert math.sqrt(spread.variance) == pytest.approx(tau, rel=0.05)
    assert spread.df == 300 * 12


def test_the_defaults_shift_counts_as_one_programs_draw_not_one_per_item():
    """The default's offset in a process moves every item together: the pool sees it once
    (one program), not as n items that each moved."""
    rng = np.random.default_rng(2)
    truth = rng.normal(0, 0.1, 12)
    together, alone = ProcessSpread(), ProcessSpread()
    ses = np.full((12, 2), 0.001).tolist()
    for _ in range(50):
        shift = np.array([0.0, 0.05])
        together.add_batch(_batch(rng, truth, 0.0, 0.001, default_shift=shift).tolist(), ses)
        own = truth[:, None] + np.outer(rng.choice([-1, 1], 12), shift)
        alone.add_batch(own.tolist(), ses)
    assert together.variance < alone.variance / 5


def _coverage(tau: float, pooled: bool, graphs: int = 400, items: int = 12) -> float:
    """Share of combined 95% CIs holding the true log-ratio when every program (each item and
    the default) has a process effect of SD ``tau`` that no within-process se sees."""
    rng = np.random.default_rng(1)
    held = total = 0
    se = 0.01
    ses = [[se, se]] * items
    for _ in range(graphs):
        truth = rng.normal(0, 0.05, items)
        centers = _batch(rng, truth, tau, se)
        spread = ProcessSpread()
        if pooled:
            spread.add_batch(centers.tolist(), ses)
        for t, c in zip(truth, centers, strict=True):
            center, _, half = combined_interval(list(c), [se, se], [300, 300], spread)
            held += abs(center - t) <= half
            total += 1
    return held / total


def test_cis_cover_the_truth_only_with_the_between_process_term():
    assert _coverage(0.015, pooled=True) >= 0.93
    assert _coverage(0.015, pooled=False) < 0.75
    assert _coverage(0.0, pooled=True) >= 0.94  # no such effect: the term costs little


def _small_default_batch(rng: np.random.Generator, truth: np.ndarray, processes: int,
                         default_sd: float, own_sd: float = 0.01) -> np.ndarray:
    """Each item deviates by ``own_sd`` per process; the default, shared by every item of
    a process, by ``default_sd`` (smaller, as measured on resnet18)."""
    own = rng.normal(0, own_sd, (truth.size, processes))
    return truth[:, None] + own - rng.normal(0, default_sd, processes)[None, :]


def test_with_two_processes_one_batch_the_defaults_share_is_taken_equal_to_an_items():
    rng = np.random.default_rng(3)
    spread = ProcessSpread()
    spread.add_batch(_small_default_batch(rng, rng.normal(0, 0.05, 12), 2, 0.0).tolist(),
                     np.full((12, 2), 0.005).tolist())
    assert not spread.default_measured
    assert spread.default_variance == spread.own_variance


def test_a_measured_default_share_above_an_items_own_is_kept():
    rng = np.random.default_rng(4)
    spread = ProcessSpread()
    for _ in range(3):  # three batches in two processes: 3 df for the default's share
        spread.add_batch(_small_default_batch(rng, rng.normal(0, 0.05, 12), 2, 0.05).tolist(),
                         np.full((12, 2), 0.005).tolist())
    assert spread.default_measured
    assert spread.default_variance > 4 * spread.own_variance  # no cap at the equal share


def _four_process_cis(default_sd: float, graphs: int = 300, items: int = 12
                      ) -> tuple[float, float]:
    """(share of 95% CIs holding the truth, median half-width) over one-batch graphs timed
    in four processes, when the default's share has SD ``default_sd`` and an item's 1%."""
    rng = np.random.default_rng(5)
    held = total = 0
    halves = []
    se = 0.008  # each process's own se: most of an item's 1% deviation
    for _ in range(graphs):
        truth = rng.normal(0, 0.05, items)
        centers = _small_default_batch(rng, truth, 4, default_sd)
        spread = ProcessSpread()
        spread.add_batch(centers.tolist(), np.full((items, 4), se).tolist())
        for t, c in zip(truth, centers, strict=True):
            center, _, half = combined_interval(list(c), [se] * 4, [300] * 4, spread)
            held += abs(center - t) <= half
            halves.append(half)
            total += 1
    return held / total, float(np.median(halves))


def test_a_measured_small_default_share_narrows_the_cis_and_they_still_cover():
    small_cover, small_half = _four_process_cis(default_sd=0.004)
    equal_cover, equal_half = _four_process_cis(default_sd=0.01)
    assert small_cover >= 0.93 and equal_cover >= 0.93
    assert small_half < 0.9 * equal_half


def test_combine_merges_items_across_processes_and_keeps_failures():
    first = [_result(1, 0.10, 0.01), _result(2, 0.0, 0.01), _result(None, 0.0, 0.01, CONTROL),
             _result(1, 0.11, 0.01, REPEAT, repeat_of=1), _result(3, 0.2, 0.01)]
    second = [_result(None, 0.02, 0.01, CONTROL, rounds=300, samples=(20,)),
              _result(1, 0.12, 0.01, rounds=300, samples=(14, 16)),
              _result(2, 0.0, 0.01, RUNTIME_ERROR), _result(1, 0.09, 0.01, REPEAT, repeat_of=1)]
    spread = ProcessSpread()
    out = combine([first, second], spread)
    assert [(r.index, r.status) for r in out] == [(1, OK), (2, RUNTIME_ERROR), (None, CONTROL),
                                                 (1, REPEAT), (3, OK)]
    config, _, control, repeat, alone = out
    assert config.log_center == pytest.approx(0.11)
    assert config.relative_to_default == pytest.approx(math.exp(0.11))
    assert config.relative_ci_low < math.exp(0.11) < config.relative_ci_high
    assert config.rounds == 400 and config.processes == 2
    assert config.timing is not None and config.timing.repeats == 4
    assert config.timing.min_ns == 10 and config.default_timing.repeats == 2
    assert config.timed_seconds == 2.0 and config.measure_seconds == 4.0
    assert control.log_center == pytest.approx(0.01) and control.processes == 2
    assert repeat.log_center == pytest.approx(0.10)
    assert alone is first[4] and alone.processes == 1  # timed in one process only
    assert spread.df == 3  # config, control, repeat: 2 df among them, 1 for the default
    assert not spread.default_measured
    assert config.process_sd == pytest.approx(math.sqrt(spread.variance))


def test_options_share_the_precision_target_caps_and_copies_out_between_processes():
    from tpugraphs_tools.measure.sessions import stop_rule

    one = stop_rule(MeasureOptions(measure_processes=1))
    two = stop_rule(MeasureOptions(measure_processes=2))
    assert two.target_precision == pytest.approx(one.target_precision * math.sqrt(2))
    assert (two.max_rounds, two.loaded_copies) == (one.max_rounds // 2, one.loaded_copies // 2)
    assert two.max_seconds_per_config == pytest.approx(one.max_seconds_per_config / 2)
    fixed = stop_rule(MeasureOptions(measure_processes=2, engine="fixed"))
    assert fixed == one


def test_the_next_process_learns_the_between_process_variance_of_the_earlier_ones():
    from tpugraphs_tools.measure.stats.replicas import partial_between

    rng = np.random.default_rng(3)
    truth = rng.normal(0, 0.1, 12)
    tau, se = 0.02, 0.002
    c = _batch(rng, truth, tau, se, processes=2)
    per_process = [[_result(i, c[i, p], se) for i in range(12)] for p in range(2)]
    spread = ProcessSpread()
    assert partial_between(per_process[:1], spread) is None
    between = partial_between(per_process, spread)
    assert between is not None
    assert 0.25 * 2 * tau ** 2 < between < 4 * 2 * tau ** 2  # var u + var v = 2τ², 1 df-ish
    assert not spread.own  # the graph's pool is left as it was


def test_an_item_whose_processes_disagree_gets_its_own_spread():
    """One config slow in three of four processes (placement luck) must not claim an order
    that the pooled spread of its tight batch would (combined_interval)."""
    spread = ProcessSpread()
    tight = [[0.001 * (i + p) for p in range(4)] for i in range(6)]
    spread.add_batch(tight, [[0.005] * 4] * 6)
    bimodal = ([-0.04, 0.61, 0.63, 0.62], [0.03] * 4, [50] * 4, spread)
    center, _, half = combined_interval(*bimodal, item_spread=True)
    assert center - half < 0 < center + half          # the default is inside its CI
    pooled = combined_interval([0.30, 0.31, 0.30, 0.31], [0.03] * 4, [50] * 4, spread,
                               item_spread=True)
    assert pooled[0] - pooled[2] > 0                   # an item that agrees is still apart
    # Without it (whole programs) the batch's pooled spread stands for every item.
    center, _, half = combined_interval(*bimodal)
    assert center - half > 0


def test_only_tile_kernel_sessions_use_an_items_own_spread(tiny_hlo: str):
    """Layout (whole programs) keeps the pooled spread: there the item rule cost 3-10 points
    of claims and no claimed order needed it (docs/benchmarks/history/
    2026-12-06-layout-item-spread.md); tile kernels use it."""
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure import MeasureOptions, Platform
    from tpugraphs_tools.measure.sessions import kernel_session, layout_session

    module, cpu = parse_hlo_text(tiny_hlo, source="test"), Platform("cpu", "cpu")
    layout = layout_session(MeasureOptions(), tiny_hlo, module, cpu).spec
    kernel = kernel_session(MeasureOptions(), tiny_hlo, module, cpu, compile_options={},
                            fresh_compiler_per_job=False).spec
    assert not layout.item_spread and kernel.item_spread
