"""Label derivation from paired rows: the npz holds ratio × in-window default, never a control."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tests.hlo_samples import DOT_RESHAPE_HLO
from tpugraphs_tools.collect.labels import separated_pairs
from tpugraphs_tools.collect.layout import layout_result, next_control_index
from tpugraphs_tools.configs import LayoutConfig, layout_space
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure import traits_of


def _row(index: int, status: str, relative: float | None, window: int | None,
         is_default: bool = False, fp: str | None = None) -> dict:
    paired = relative is not None
    return {"config_index": index, "strategy": "random", "config": "{}",
            "status": status, "is_default": is_default,
            "optimized_fingerprint": fp or f"fp{index}", "duplicate_of": None,
            "runtime_min_ns": None if is_default else 1000, "runtime_median_ns": None,
            "runtime_cv": None, "repeats": None, "default_runtime_ns": window,
            "relative_to_default": relative,
            "relative_ci_low": relative * 0.98 if paired else None,
            "relative_ci_high": relative * 1.02 if paired else None,
            "rounds": 10 if paired else None,
            "stop_reason": "precision" if paired else None}


@pytest.fixture
def space_configs():
    space = layout_space(parse_hlo_text(DOT_RESHAPE_HLO, source="test"))
    tensor = space.tensors[0]
    perms = [(0, 1), (1, 0)] if tensor.rank == 2 else [(0, 1, 2), (2, 1, 0), (1, 0, 2)]
    configs = [LayoutConfig()] + [LayoutConfig.of({(tensor.config_index, tensor.slot): p})
                                  for p in perms]
    return space, configs[:3]


def test_control_rows_never_enter_the_npz(space_configs):
    space, configs = space_configs
    rows = [_row(0, "ok", None, None, is_default=True),
            _row(1, "ok", 0.5, 2000), _row(2, "ok", 1.5, 2200),
            _row(3, "control", 1.01, 2000), _row(4, "control", 0.99, 2400)]
    result = layout_result(rows, configs, space, traits_of("paired"))
    arrays, summary = result.arrays, result.summary
    runtime = arrays["config_runtime"]
    assert runtime.tolist() == [2100, 1050, 3150]  # ratio × median in-window default
    assert arrays["node_config_feat"].shape[0] == 3
    assert [r["npz_row"] for r in result.rows] == [0, 1, 2, None, None]
    assert "npz_row" not in rows[0]  # the rows handed in are not changed
    default = result.rows[0]
    assert default["relative_to_default"] == 1.0 and default["stop_reason"] == "reference"
    assert default["default_runtime_ns"] == 2100 and default["runtime_min_ns"] == 2000
    assert summary.configs == 3 and summary.labels.controls == 2
    assert summary.labels.controls_holding_1 == 2
    assert summary.labels.noise_floor == pytest.approx(0.02)
    # default [1, 1], 0.5 ± 2%, 1.5 ± 2%: every pair apart; controls are not labels
    assert (summary.labels.pairs, summary.labels.pairs_separated) == (3, 3)


def test_separated_pairs_counts_disjoint_intervals_like_checking_every_pair():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 40):
        center = rng.normal(1.0, 0.02, n).round(3)  # rounding makes ties and touching CIs
        half = rng.uniform(0.0, 0.02, n).round(3)
        lows, highs = center - half, center + half
        brute = sum(1 for i, j in itertools.combinations(range(n), 2)
                    if highs[i] < lows[j] or highs[j] < lows[i])
        assert separated_pairs(lows, highs) == brute
    assert separated_pairs([1.0, 1.02], [1.02, 1.03]) == 0  # touching is not apart
    assert separated_pairs([1.0, 1.0], [1.0, 1.0]) == 0


def test_control_indices_follow_the_configs():
    assert next_control_index({0: 1, 1: 1, 2: 1}, 3) == 3
    assert next_control_index({0: 1, 2: 1, 3: 1}, 3) == 4
    assert next_control_index({}, 5) == 5


def _paired(index: int, status: str, ratio: float, half: float, rounds: int = 40,
            duplicate_of: int | None = None) -> dict:
    from tpugraphs_tools.collect.labels import _t

    t = _t(rounds)
    return {"config_index": index, "strategy": "random", "config": "{}", "status": status,
            "is_default": False, "rounds": rounds, "window_sd": None,
            "relative_to_default": ratio, "duplicate_of": duplicate_of,
            "relative_ci_low": ratio * math.exp(-half * t),
            "relative_ci_high": ratio * math.exp(half * t)}


def test_repeats_widen_labels_by_the_variance_between_windows_once():
    from tpugraphs_tools.collect.labels import widen_by_windows, window_sd

    rows = [_paired(1, "ok", 1.00, 0.005), _paired(2, "ok", 1.10, 0.005),
            _paired(3, "repeat", 1.04, 0.005, duplicate_of=1),
            _paired(4, "repeat", 1.06, 0.005, duplicate_of=2),
            _paired(5, "control", 1.0, 0.005)]
    from scipy.stats import chi2

    d2 = math.log(1.04) ** 2 + math.log(1.06 / 1.10) ** 2
    expected = math.sqrt((d2 / chi2.ppf(0.2, 2) - 2 * 0.005 ** 2) / 2)
    assert window_sd(rows) == pytest.approx(expected)
    point = math.sqrt((d2 / 2 - 2 * 0.005 ** 2) / 2)  # the plain estimate is smaller
    assert window_sd(rows, confidence=0.5) < window_sd(rows) and point < expected
    control_before = dict(rows[4])
    widened, sd = widen_by_windows(rows)
    first = (widened[0]["relative_ci_low"], widened[0]["relative_ci_high"])
    assert widened[0]["window_sd"] == pytest.approx(sd)
    assert first[0] < 1.0 * math.exp(-0.005 * 2.1) and first[1] > math.exp(0.005 * 2.1)
    again, _ = widen_by_windows(widened)  # idempotent: resume and Ray commit derive labels
    assert (again[0]["relative_ci_low"], again[0]["relative_ci_high"]) == pytest.approx(first)
    assert widened[4] == control_before  # A/A controls are never widened
    assert window_sd(rows[:2]) is None


def test_window_widening_keeps_the_t_of_a_label_averaged_over_processes(space_configs):
    """A label timed in several processes has a Satterthwaite-df CI and ``rounds`` summed over
    the processes: widening must take its se out with the t the CI was built with (Yuen's df
    on the summed rounds is far larger, so the window term came out too small)."""
    from tpugraphs_tools.collect.labels import _t, widen_by_windows
    from tpugraphs_tools.collect.layout import _row
    from tpugraphs_tools.measure import OK, ConfigResult, MeasureOptions
    from tpugraphs_tools.measure.stats.replicas import ProcessSpread, combined_interval

    space, configs = space_configs
    rng = np.random.default_rng(3)
    spread = ProcessSpread()
    spread.add_batch(rng.normal(0.0, 0.02, (3, 4)), np.full((3, 4), 0.004))
    center, se, half = combined_interval([0.01, 0.05, -0.03, 0.02], [0.004] * 4, [15] * 4,
                                         spread)
    t_used = half / se
    rounds = 4 * 25
    assert t_used > _t(rounds) * 1.1  # the defect's premise: the two quantiles differ
    result = ConfigResult(1, OK, relative_to_default=math.exp(center),
                          relative_ci_low=math.exp(center - half),
                          relative_ci_high=math.exp(center + half), rounds=rounds,
                          stop_reason="precision", log_center=center, log_se=se, processes=4,
                          process_sd=math.sqrt(spread.variance))
    rows = [_row(1, configs[1], space, MeasureOptions(), traits_of("paired"), result),
            _paired(2, "ok", 1.00, 0.005), _paired(3, "repeat", 1.05, 0.005, duplicate_of=2)]
    rows, sd = widen_by_windows(rows)
    assert sd and sd > 0.01
    label = rows[0]
    widened = (math.log(label["relative_ci_high"]) - math.log(label["relative_ci_low"])) / 2
    assert widened == pytest.approx(t_used * math.sqrt(se ** 2 + sd ** 2))
    label = widen_by_windows(rows)[0][0]  # idempotent with the kept quantile too
    again = (math.log(label["relative_ci_high"]) - math.log(label["relative_ci_low"])) / 2
    assert again == pytest.approx(widened)
