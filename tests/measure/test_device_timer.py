"""Device time in the paired engine without a GPU: a fake source of kernel records stands in
for CUPTI, so the labels, CIs, the ``timer`` column and every fallback to host time are
visible on CPU (docs/gpu.md)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from tpugraphs_tools.measure import device_env
from tpugraphs_tools.measure.engines import DefaultProgram, PairedEngine, TimedItem
from tpugraphs_tools.measure.engines import device_timer as T
from tpugraphs_tools.measure.engines import paired as paired_engine
from tpugraphs_tools.measure.engines.kernel_count import KernelCountCheck
from tpugraphs_tools.measure.messages import Batch, DefaultInfo, SessionSpec
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.measure.results import AUTO, CONTROL, OK, ConfigResult
from tpugraphs_tools.measure.sessions import tile_options
from tpugraphs_tools.measure.stats.replicas import _one_timer
from tpugraphs_tools.measure.stats.stopping import StopRule


class FakeGpu:
    """Kernel records of fake programs: a run of program ``p`` 'launches' one kernel whose
    device time is ``kernel_ns[p]`` × (1 ± 0.5% noise); the host sees 80 µs of launch."""

    def __init__(self, kernel_ns: dict[str, float], seed: int = 0, cold: float = 1.0) -> None:
        self.kernel_ns = kernel_ns
        self.rng = random.Random(seed)
        self.records: list[tuple[str, float]] | None = None
        self.fail_after: int | None = None
        self.samples = 0
        self.cold = cold            # a run after another program's: this much slower (L2)
        self.last: str | None = None
        self.stray: set[int] = set()  # samples (1-based) that catch one record too many

    def start(self) -> None:
        self.records = []

    def stop(self) -> list[tuple[str, float]]:
        self.samples += 1
        if self.fail_after is not None and self.samples > self.fail_after:
            raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")
        out, self.records = self.records or [], None
        if self.samples in self.stray:
            out.append(("memset_other_stream", 5.0))
        return out

    def run(self, program: str) -> None:
        ns = self.kernel_ns[program] * (1 + self.rng.gauss(0, 0.005))
        if self.last != program:
            ns *= self.cold
        self.last = program
        if self.records is not None:
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
    profiler = FakeGpu({"a": 500.0})
    monkeypatch.setattr(_xla_compat, "profiler_kernel_records", lambda: profiler)
    timer, why = T.choose_timer(T.DEVICE, lambda: profiler.run("a"))
    # the profiler is not in the device chain (a trace per sample: too slow to label)
    assert timer.name == T.HOST and why == "cupti: not available here (cannot import name " \
        "'mosaic_gpu')"
    assert T.choose_timer(T.PROFILER, lambda: profiler.run("a"))[0].name == T.PROFILER
    timer, why = T.choose_timer(T.PROFILER, lambda: None)
    assert timer.name == T.HOST and "profiler: no kernel records" in why
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
    monkeypatch.setattr(paired_engine, "input_bytes", lambda signature: 0)
    monkeypatch.setattr(paired_engine, "make_inputs", lambda *args: ["y"])

    def run(exe: Any, inputs: list[Any]) -> list[Any]:
        gpu.run(exe)
        return []

    spec = SessionSpec("text", engine="paired", warmup=1, min_sample_ms=0.0, timer=timer,
                       stop=StopRule(max_rounds=60, loaded_copies=2, target_precision=0.002))
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
    assert device_env.timer_for("gpu", "tile", AUTO) == T.DEVICE
    assert device_env.timer_for("gpu", "layout", AUTO) == T.HOST
    assert device_env.timer_for("cpu", "tile", AUTO) == T.HOST
    assert device_env.timer_for("cpu", "tile", T.CUPTI) == T.CUPTI
    opts = MeasureOptions(loaded_copies=8)
    gpu = tile_options(opts, "gpu")
    assert gpu.loaded_copies == 8  # set by the user: kept
    assert gpu.measure_processes == 2 and gpu.budget_seconds == 4.0
    assert tile_options(opts, "cpu") == opts
    assert tile_options(MeasureOptions(timer=T.HOST), "gpu") == \
        MeasureOptions(timer=T.HOST)


def test_a_device_sample_follows_an_untimed_run_so_no_timed_run_finds_a_cold_cache():
    """Programs are interleaved: a run after another program's is 1.5x slower here. The
    untimed run before each sample takes that; k=1 and k=4 then read the same warm time."""
    gpu = FakeGpu({"a": 1_000.0, "b": 2_000.0}, cold=1.5)
    timer = T.KernelRecordTimer(T.CUPTI, gpu)
    for k in (1, 4):
        gpu.run("b")  # the program timed just before
        per_run, _ = timer.sample(lambda: gpu.run("a"), k=k)
        assert per_run == pytest.approx(1_000, rel=0.02), k  # 1500 (k=1), 1125 (k=4) unprimed
        assert timer.last_kernels == k
    host = T.HostTimer()
    calls = []
    host.sample(lambda: calls.append(1), k=3)  # the host clock keeps --prime-runs (0)
    assert len(calls) == 3 and host.last_kernels is None


def test_a_kernel_count_off_is_sampled_again_then_fails_saying_why():
    gpu = FakeGpu({"a": 1_000.0})
    check = KernelCountCheck(T.KernelRecordTimer(T.CUPTI, gpu))
    gpu.stray = {2}  # the second sample catches a record from elsewhere: 5 in 4 runs
    for _ in range(3):
        per_run, _ = check.sample("a", lambda: gpu.run("a"), k=4)
        assert per_run == pytest.approx(1_000, rel=0.02)  # never the stray record's sum
    assert check.retried == 1 and check.kernels_per_run("a") == 1
    gpu.stray = set(range(gpu.samples + 1, gpu.samples + 10))  # every sample from now on
    with pytest.raises(T.DeviceTimerError, match="kernel count off after 2 retries: 5 kernels "
                                                 "in 4 runs is no whole number a run"):
        check.sample("a", lambda: gpu.run("a"), k=4)
    gpu.stray = set()
    two = KernelCountCheck(T.KernelRecordTimer(T.CUPTI, gpu))
    two.sample("b", lambda: gpu.run("a"), k=2)  # calibrated: 1 a run

    def twice() -> None:  # the same program now launches two kernels a run
        gpu.run("a")
        gpu.run("a")

    with pytest.raises(T.DeviceTimerError, match="2 kernels a run, calibrated at 1"):
        two.sample("b", twice, k=2)
    assert KernelCountCheck(T.HostTimer()).sample("c", lambda: None, k=2)[0] >= 0


def test_device_labels_carry_the_kernel_count_and_a_host_label_says_why(monkeypatch):
    gpu = FakeGpu({"default": 1_000.0, "slow": 1_300.0, "same": 1_000.0})
    labelled = _label(_engine(monkeypatch, gpu, T.CUPTI))
    assert {r.kernels_per_run for r in labelled} == {1}
    assert {r.timer_fallback for r in labelled} == {None}
    gpu = FakeGpu({"default": 1_000.0, "slow": 1_300.0, "same": 1_000.0})
    engine = _engine(monkeypatch, gpu, T.CUPTI)
    gpu.stray = set(range(5, 10_000))  # the check passes, then every sample is off
    labelled = _label(engine)
    assert {r.timer for r in labelled} == {T.HOST}
    assert {r.kernels_per_run for r in labelled} == {None}
    [why] = {r.timer_fallback for r in labelled}
    assert why.startswith("device timer failed: cupti: kernel count off after 2 retries")


class FakeCuptiExt:
    """jax's Mosaic GPU extension as the 0.10/0.11 jaxlibs behave: ``_cupti_init`` subscribes,
    then fails enabling kernel activity; ``_cupti_get_timings`` unsubscribes."""

    def __init__(self) -> None:
        self.subscribed = False
        self.finalized: list[bool] = []

    def _cupti_init(self) -> None:
        if self.subscribed:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.subscribed = True
        raise RuntimeError("failed to enable tracking of kernel activity by CUPTI")

    def _cupti_get_timings(self, finalize: bool = True) -> list[tuple[str, float]]:
        self.finalized.append(finalize)
        self.subscribed = False
        return []


def test_a_failed_cupti_start_unsubscribes_so_the_next_start_is_not_blocked():
    from tpugraphs_tools import _xla_compat

    ext = FakeCuptiExt()
    timer = T.KernelRecordTimer(T.CUPTI, _xla_compat.cupti_kernel_records(ext))
    for _ in range(2):  # the second start fails the same way, not on a held subscription
        with pytest.raises(T.DeviceTimerError, match=r"cannot start .*enable tracking"):
            timer.sample(lambda: None, k=1)
        assert not ext.subscribed and ext.finalized[-1] is True
    assert ext.finalized == [True, True]
