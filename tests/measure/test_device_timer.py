"""Device time in the paired engine without a GPU: a fake source of kernel records stands in
for CUPTI, so the labels, CIs, the ``timer`` column and every fallback to host time are
visible on CPU (docs/gpu.md)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from tpugraphs_tools.measure import device_env
from tpugraphs_tools.measure import device_timer as T
from tpugraphs_tools.measure.engines import DefaultProgram, PairedEngine, TimedItem
from tpugraphs_tools.measure.engines import paired as paired_engine
from tpugraphs_tools.measure.messages import Batch, DefaultInfo, SessionSpec
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.measure.paired import StopRule
from tpugraphs_tools.measure.replicas import _one_timer
from tpugraphs_tools.measure.results import CONTROL, OK, ConfigResult


class FakeGpu:
    """Kernel records of fake programs: a run of program ``p`` 'launches' one kernel whose
    device time is ``kernel_ns[p]`` × (1 ± 0.5% noise); the host sees 80 µs of launch."""

    def __init__(self, kernel_ns: dict[str, float], seed: int = 0) -> None:
        self.kernel_ns = kernel_ns
        self.rng = random.Random(seed)
        self.records: list[tuple[str, float]] | None = None
        self.fail_after: int | None = None
        self.samples = 0

    def start(self) -> None:
        self.records = []

    def stop(self) -> list[tuple[str, float]]:
        self.samples += 1
        if self.fail_after is not None and self.samples > self.fail_after:
            raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")
        out, self.records = self.records or [], None
        return out

    def run(self, program: str) -> None:
        if self.records is not None:
            ns = self.kernel_ns[program] * (1 + self.rng.gauss(0, 0.005))
            self.records.append((f"gemm_{program}", ns))


def test_kernel_record_timer_reads_device_time_per_run_not_the_host_clock():
    gpu = FakeGpu({"a": 1_000.0})
    timer = T.KernelRecordTimer(T.CUPTI, gpu)
    per_run, seconds = timer.sample(lambda: gpu.run("a"), k=10)
    assert per_run == pytest.approx(1_000, rel=0.01) and seconds > 0


def test_no_records_or_more_kernel_time_than_wall_time_is_an_error_not_a_label():
    gpu = FakeGpu({"a": 1_000.0})
    timer = T.KernelRecordTimer(T.CUPTI, gpu)
    with pytest.raises(T.DeviceTimerError, match="no kernel records"):
        timer.sample(lambda: None, k=3)
    gpu.kernel_ns["a"] = 10e9  # 10 s of 'kernel' inside a sample of microseconds
    with pytest.raises(T.DeviceTimerError, match="records from elsewhere"):
        timer.sample(lambda: gpu.run("a"), k=1)


def test_choose_timer_falls_back_to_host_and_says_why(monkeypatch):
    from tpugraphs_tools import _xla_compat

    def missing():
        raise ImportError("cannot import name 'mosaic_gpu'")

    monkeypatch.setattr(_xla_compat, "cupti_kernel_records", missing)
    monkeypatch.setattr(_xla_compat, "profiler_kernel_records", lambda: FakeGpu({}))
    timer, why = T.choose_timer(T.DEVICE, lambda: None)
    assert timer.name == T.HOST
    assert "cupti: not available here" in why and "profiler: no kernel records" in why
    gpu = FakeGpu({"a": 500.0})
    monkeypatch.setattr(_xla_compat, "cupti_kernel_records", lambda: gpu)
    timer, why = T.choose_timer(T.DEVICE, lambda: gpu.run("a"))
    assert timer.name == T.CUPTI and why is None
    assert T.choose_timer(T.HOST, lambda: None)[0].name == T.HOST


def test_the_real_device_timers_fall_back_on_this_cpu_machine():
    """No GPU here: whatever the installed jax has, a device choice ends on the host."""
    timer, why = T.choose_timer(T.CUPTI, lambda: sum(range(100)))
    assert timer.name == T.HOST and why


def _engine(monkeypatch, gpu: FakeGpu, timer: str) -> PairedEngine:
    monkeypatch.setattr(paired_engine.X, "serialize_executable", lambda exe, device: b"default")
    monkeypatch.setattr(paired_engine.X, "deserialize_executable",
                        lambda blob, device: blob.decode())
    monkeypatch.setattr(paired_engine.C, "input_bytes", lambda signature: 0)
    monkeypatch.setattr(paired_engine.C, "make_inputs", lambda *args: ["y"])

    def run(exe: Any, inputs: list[Any]) -> list[Any]:
        gpu.run(exe)
        return []

    spec = SessionSpec("text", engine="paired", warmup=1, min_sample_ms=0.0, timer=timer,
                       stop=StopRule(max_rounds=60, copies=2, target_precision=0.002))
    default = DefaultProgram(spec, "default", ["x"], signature=None, device=None, run=run)
    from tpugraphs_tools import _xla_compat

    monkeypatch.setattr(_xla_compat, "cupti_kernel_records", lambda: gpu)
    engine = PairedEngine(default)
    engine.ready(DefaultInfo(0.0, {}, "key"))
    return engine


def _label(engine: PairedEngine) -> list[ConfigResult]:
    [control] = engine.extras()
    items = [TimedItem(ConfigResult(1, OK), [], b"slow"),
             TimedItem(ConfigResult(2, OK), [], b"same"), control]
    loaded = engine.load(items)
    engine.warm(loaded)
    return engine.label(Batch([], runs_per_sample=2), loaded, items)


def test_paired_labels_in_device_time_carry_the_timer_and_honest_cis(monkeypatch):
    """Device-timed kernels of 1.00, 1.30 and 1.00 µs under the same 80 µs launch: the labels
    are the kernels' ratios, the CIs hold them and the A/A control holds 1."""
    gpu = FakeGpu({"default": 1_000.0, "slow": 1_300.0, "same": 1_000.0})
    labelled = _label(_engine(monkeypatch, gpu, T.DEVICE))
    slow, same, control = labelled
    assert {r.timer for r in labelled} == {T.CUPTI}
    assert control.status == CONTROL
    for result, true in ((slow, 1.3), (same, 1.0), (control, 1.0)):
        # The CI is a t interval of the rounds' log-ratios (noise 0.5% per run): tight, and
        # near the true ratio (a 95% CI may miss it; the order seed is fresh per batch).
        low, high = result.relative_ci_low, result.relative_ci_high
        assert low <= result.relative_to_default <= high and 0 < (high - low) / 2 < 0.02
        assert low - 0.01 <= true <= high + 0.01
    assert slow.config_samples_ns and all(
        ns == pytest.approx(1_300, rel=0.05) for ns in slow.config_samples_ns)
    assert math.isfinite(slow.log_se) and slow.log_se > 0


def test_a_device_timer_failing_mid_batch_retimes_the_batch_on_the_host(monkeypatch, capsys):
    gpu = FakeGpu({"default": 1_000.0, "slow": 1_300.0, "same": 1_000.0})
    engine = _engine(monkeypatch, gpu, T.CUPTI)
    gpu.fail_after = 12  # the check (2 samples) passes, the batch breaks after a few rounds
    labelled = _label(engine)
    assert {r.timer for r in labelled} == {T.HOST}  # every row of the batch: one timer
    assert engine.timer is not None and engine.timer.name == T.HOST
    assert "device timer failed" in capsys.readouterr().err


def test_a_missing_device_timer_labels_on_the_host_and_the_row_says_so(monkeypatch, capsys):
    gpu = FakeGpu({"default": 1_000.0, "slow": 1_300.0, "same": 1_000.0})
    engine = _engine(monkeypatch, gpu, T.PROFILER)
    from tpugraphs_tools import _xla_compat

    def broken():
        raise RuntimeError("profiler service unavailable")

    monkeypatch.setattr(_xla_compat, "profiler_kernel_records", broken)
    labelled = _label(engine)
    assert {r.timer for r in labelled} == {T.HOST}
    assert "no device timer" in capsys.readouterr().err


def test_processes_that_disagree_on_the_timer_make_a_mixed_label():
    rows = [ConfigResult(1, OK, timer=T.CUPTI), ConfigResult(1, OK, timer=T.HOST)]
    assert _one_timer(rows) == "mixed"
    assert _one_timer(rows[:1]) == T.CUPTI and _one_timer([ConfigResult(1, OK)]) is None


def test_auto_is_device_time_for_gpu_tiles_only_and_gpu_budgets_fill_unset_options():
    assert device_env.timer_for("gpu", "tile", T.AUTO) == T.DEVICE
    assert device_env.timer_for("gpu", "layout", T.AUTO) == T.HOST
    assert device_env.timer_for("cpu", "tile", T.AUTO) == T.HOST
    assert device_env.timer_for("cpu", "tile", T.CUPTI) == T.CUPTI
    opts = MeasureOptions(copies=8)
    gpu = device_env.tile_options(opts, "gpu")
    assert gpu.copies == 8  # set by the user: kept
    assert gpu.measure_processes == 2 and gpu.budget_seconds == 4.0
    assert device_env.tile_options(opts, "cpu") == opts
    assert device_env.tile_options(MeasureOptions(timer=T.HOST), "gpu") == \
        MeasureOptions(timer=T.HOST)
