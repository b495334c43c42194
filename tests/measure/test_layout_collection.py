"""End-to-end layout measurement in worker processes on a small conv net (no timing asserts)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tpugraphs_tools.collect.layout import collect_layout_configs
from tpugraphs_tools.configs import LayoutConfig, layout_space
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.measure.workers.faults import FAULTS_ENV


def _explicit_configs(module):
    space = layout_space(module)
    conv_out = next(t for t in space.tensors if t.node.startswith("conv") and t.slot == 0)
    key = (conv_out.config_index, 0)
    return space, [
        LayoutConfig(),
        LayoutConfig.of({key: conv_out.default}),           # states the default: compiler no-op
        LayoutConfig.of({key: (0, 1, 2, 3)}),               # batch-minor: copies required
        LayoutConfig.of({key: (1, 2, 3, 0)}),               # crashes (injected)
        LayoutConfig.of({key: (0, 1, 2, 3)}),               # same as #2 after compiling
        LayoutConfig.of({key: (2, 1, 3, 0)}),               # after the crash: still measured
    ]


def _inject(monkeypatch: pytest.MonkeyPatch, faults: dict[int, str]) -> None:
    """Test-only faults reach the spawned workers through their environment."""
    monkeypatch.setenv(FAULTS_ENV, json.dumps(faults))


def test_noop_crash_duplicate_and_real_configs(convnet_source, monkeypatch):
    src = convnet_source
    space, configs = _explicit_configs(src.module)
    _inject(monkeypatch, {3: "crash"})
    opts = MeasureOptions(configs=len(configs), warmup=1, timeout=60, min_sample_ms=1,
                          max_rounds=8)
    result = collect_layout_configs(src.text, src.module, opts, configs=configs)
    status = [r["status"] for r in result.rows]
    assert status[:6] == ["ok", "noop", "ok", "crash", "duplicate", "ok"]
    # One A/A control per timed batch (and a repeat of an earlier config from the second
    # batch on), after the configs, never in the npz.
    extra = result.rows[6:]
    controls = [r for r in extra if r["status"] == "control"]
    assert controls and {r["status"] for r in extra} <= {"control", "repeat"}
    assert [r["config_index"] for r in extra] == list(range(6, 6 + len(extra)))
    assert all(r["npz_row"] is None and r["rounds"] >= 8 for r in extra)
    assert all(rows_ok["duplicate_of"] in (2, 5) for rows_ok in extra
               if rows_ok["status"] == "repeat")
    assert all(r["relative_ci_low"] <= r["relative_to_default"] <= r["relative_ci_high"]
               for r in result.rows if r["status"] in ("ok", "control"))
    # Timed in two measurement processes (the default): labels carry their spread.
    assert all(r["process_sd"] is not None for r in result.rows
               if r["status"] in ("ok", "control") and not r["is_default"])
    assert result.rows[0]["stop_reason"] == "reference"
    assert result.rows[0]["relative_to_default"] == 1.0
    rows = result.rows
    assert rows[1]["duplicate_of"] == 0 and rows[1]["npz_row"] is None
    assert rows[4]["duplicate_of"] == 2
    assert "SIGSEGV" in rows[3]["error_message"]
    assert result.summary.worker_restarts == 1
    # Copies the forced layout needs are visible in the stored realized layouts.
    assert rows[0]["num_copies"] == 0 and rows[2]["num_copies"] > 0
    realized = json.loads(rows[2]["realized"])
    assert realized["copies"] == rows[2]["num_copies"]
    assert json.loads(rows[2]["config"]) != json.loads(rows[0]["config"])
    # The forced layout is verified in the optimized module, per slot.
    assert json.loads(rows[0]["honoured"]) == {}
    assert [s["honoured"] for s in realized["slots"]] == [True]
    assert json.loads(rows[2]["honoured"]) == {realized["slots"][0]["node"]: {"output": True}}
    # npz arrays hold only distinct measured labels, TpuGraphs dtypes and shapes.
    feat, runtime = result.arrays["node_config_feat"], result.arrays["config_runtime"]
    assert feat.shape == (3, space.num_config_nodes, 18) and feat.dtype == np.float32
    assert runtime.dtype == np.int64 and (runtime > 0).all()
    assert (feat[0] == -1).all() and feat.min() >= -1 and feat.max() <= 5
    assert [r["npz_row"] for r in rows if r["status"] == "ok"] == [0, 1, 2]
    for r in rows:
        if r["status"] == "ok":
            # a layout changes where values live, not what they are
            assert r["runtime_min_ns"] > 0 and r["max_abs_error"] < 1e-3


def test_hang_becomes_timeout_and_compile_failure_is_recorded(convnet_source, monkeypatch):
    src = convnet_source
    _, configs = _explicit_configs(src.module)
    _inject(monkeypatch, {1: "hang", 2: "raise"})
    # Robust under load: the timeout is what turns the hang into a row, and it also bounds the
    # default's compile and the control batch's loading, so those are kept light (one
    # process, two copies) and the timeout long enough for a busy host.
    opts = MeasureOptions(configs=3, warmup=0, timeout=30, min_sample_ms=1, max_rounds=8,
                          measure_processes=1, loaded_copies=2)
    result = collect_layout_configs(src.text, src.module, opts,
                                    configs=[configs[0], configs[2], configs[5]])
    # Nothing reached timing: a control-only batch still measures the default in a window.
    assert [r["status"] for r in result.rows] == ["ok", "timeout", "compile_error", "control"]
    assert result.rows[0]["runtime_min_ns"] > 0
    assert result.arrays["config_runtime"].tolist() == [result.rows[0]["default_runtime_ns"]]
    assert "injected" in result.rows[2]["error_message"]


# (processes, lanes): one after another; a wave of two side by side, then one alone
@pytest.mark.parametrize(("processes", "lanes"), [(2, 1), (3, 2)])
def test_a_measurement_crash_is_retried_alone_in_every_measurement_process(
        convnet_source, monkeypatch, processes, lanes):
    src = convnet_source
    _, configs = _explicit_configs(src.module)
    # Every process loads a batch at once, so every one of them dies on config 1.
    _inject(monkeypatch, {1: "crash_run"})  # the measurement worker dies running config 1
    opts = MeasureOptions(configs=3, warmup=0, timeout=60, min_sample_ms=1, max_rounds=8,
                          measure_processes=processes, timing_lanes=lanes, isolation="pause")
    result = collect_layout_configs(src.text, src.module, opts,
                                    configs=[configs[0], configs[2], configs[5]])
    rows = result.rows
    assert [r["status"] for r in rows[:3]] == ["ok", "crash", "ok"]
    assert "SIGSEGV" in rows[1]["error_message"]
    assert result.summary.worker_restarts >= 2  # the batch, then config 1 alone
    # The survivor was timed again alone, in both processes, and its label combines them.
    assert rows[2]["process_sd"] is not None and rows[2]["rounds"] >= 8
    assert rows[2]["relative_ci_low"] <= rows[2]["relative_to_default"] \
        <= rows[2]["relative_ci_high"]
    assert {r["status"] for r in rows[3:]} == {"control"}
    # One lane: the timing process had every CPU; lanes: a CPU each (the rows say which)
    cpus = len(os.sched_getaffinity(0)) if lanes == 1 else 1
    assert {r["timing_cpus"] for r in rows[2:]} == {cpus}


def test_processes_timing_side_by_side_give_labels_from_every_process(convnet_source):
    """Two lanes (pause isolation): both processes of a wave time each config; the labels
    combine all three processes."""
    src = convnet_source
    _, configs = _explicit_configs(src.module)
    opts = MeasureOptions(configs=3, warmup=1, timeout=60, min_sample_ms=1, max_rounds=12,
                          measure_processes=3, timing_lanes=2, isolation="pause")
    result = collect_layout_configs(src.text, src.module, opts,
                                    configs=[configs[0], configs[2], configs[5]])
    rows = result.rows
    assert [r["status"] for r in rows[:3]] == ["ok", "ok", "ok"]
    assert result.summary.worker_restarts == 0
    for row in rows[1:]:
        assert row["process_sd"] is not None and row["rounds"] >= 3 * 4  # 4 rounds each
        assert row["relative_ci_low"] <= row["relative_to_default"] <= row["relative_ci_high"]
        assert row["timing_cpus"] == 1  # pinned: the program's runs had one core


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pin needs a CPU to spare")
def test_pin_isolation_rows_say_the_program_was_timed_on_one_cpu(convnet_source):
    """``--isolation pin`` times on the first CPU only (auto picks it with >= 4 CPUs): a
    label of a one-core run, and the rows record it."""
    src = convnet_source
    _, configs = _explicit_configs(src.module)
    opts = MeasureOptions(configs=2, warmup=0, timeout=60, min_sample_ms=1, max_rounds=8,
                          measure_processes=1, isolation="pin")
    result = collect_layout_configs(src.text, src.module, opts,
                                    configs=[configs[0], configs[2]])
    timed = [r for r in result.rows if r["rounds"]]
    assert timed and {r["timing_cpus"] for r in timed} == {1}
    assert result.rows[0]["timing_cpus"] is None  # the default's own row: never timed alone
