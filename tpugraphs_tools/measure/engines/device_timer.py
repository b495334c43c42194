"""How one timed sample of k runs is read: the host clock, or the GPU's own kernel records.

A GPU kernel of a small model runs for microseconds, while one call of a loaded executable
costs 30–90 µs of host time on an H200 (launch, argument handling, the wait): a host-timed
label of such a kernel measures the launch (the first H200 run, docs/gpu.md). A device timer
reads what the GPU itself recorded for the kernels a sample launched and sums their
durations; a sample's value is that sum per run. Runs of a sample go back to back with no
cache flush in between, so a label is a *hot-cache* time, as a kernel sees it between other
kernels of a program (Triton's ``do_bench`` flushes L2 before each run instead; docs/gpu.md).

Every device-timed sample follows one untimed run of the same program (more with
``--prime-runs``): programs are interleaved, so without it a sample's first run would find L2
holding another program's data while its k−1 followers find their own, and since k differs
between reruns, labels would mix the two cache states by different shares. The host clock
keeps ``--prime-runs`` as asked (measured on CPU: docs/benchmarks/history/
2026-12-03-prime-runs.md).

Timers (configs.parquet ``timer``): ``host`` (``time.perf_counter_ns`` around the k runs, every
platform), ``cupti`` (CUPTI kernel activity records through jax's Mosaic GPU extension),
``profiler`` (a ``jax.profiler`` trace per sample, kernel events of the GPU plane's streams,
read with ``jax.profiler.ProfileData``). The jax internals both device timers touch are in
``_xla_compat``. ``--timer device`` takes CUPTI only: the profiler's trace session and file
export per sample (estimated 0.1–1 s) leave a tile config 1–3 rounds of its 1 s budget, too
few for a label that claims anything, and it loads the same libcupti, so it fails where CUPTI
fails; ``--timer profiler`` still asks for it, and the device check's probe measures its cost
per sample (docs/gpu.md). A device timer that is missing, fails, or reports nothing plausible
is never fatal: :func:`choose_timer` falls back to ``host`` and says why, and the paired engine
re-times a batch on the host if a device timer fails in the middle of it (the kernel count
check, ``engines/kernel_count.py``, is one way to fail).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from tpugraphs_tools.errors import DeviceTimerError
from tpugraphs_tools.measure.engines.sampling import timed_sample
from tpugraphs_tools.measure.results import CUPTI, DEVICE, HOST, PROFILER, TIMERS

Run = Callable[[], object]
DEVICE_ORDER = (CUPTI,)  # the profiler leaves the chain: module docstring
# Kernel time cannot exceed the wall time around it; this much slack covers clock offsets.
_SLACK_NS = 20_000


class SampleTimer(Protocol):
    """Times one sample: ``k`` back-to-back runs after ``prime`` untimed ones."""

    name: str
    # kernels the last sample's records held (None: the host clock counts none)
    last_kernels: int | None

    def sample(self, run: Run, k: int, prime: int = 0) -> tuple[float, float]:
        """(ns per run, wall seconds the sample took)."""
        ...


class HostTimer:
    """The host clock around the runs (sampling.timed_sample): what CPU labels always used."""

    name = HOST
    last_kernels: int | None = None

    def sample(self, run: Run, k: int, prime: int = 0) -> tuple[float, float]:
        return timed_sample(run, k, prime)


class KernelRecords(Protocol):
    """A source of device kernel records: ``start`` before the runs, ``stop`` after them
    returns (kernel name, duration ns) of every kernel launched in between."""

    def start(self) -> None: ...

    def stop(self) -> list[tuple[str, float]]: ...


class KernelRecordTimer:
    """Device time per run: the kernels' durations summed over the sample, divided by k."""

    def __init__(self, name: str, records: KernelRecords) -> None:
        self.name = name
        self.records = records
        self.last_kernels: int | None = None

    def sample(self, run: Run, k: int, prime: int = 0) -> tuple[float, float]:
        """At least one untimed run first, whatever ``prime`` and ``k`` (module docstring)."""
        for _ in range(max(1, prime)):
            run()
        start = time.perf_counter_ns()
        try:
            self.records.start()
        except Exception as exc:  # a jax internal: any failure means "no device timer"
            raise DeviceTimerError(f"{self.name}: cannot start ({exc})") from exc
        try:
            for _ in range(k):
                run()
        finally:
            try:
                kernels = self.records.stop()
            except Exception as exc:
                raise DeviceTimerError(f"{self.name}: cannot read records ({exc})") from exc
        wall = time.perf_counter_ns() - start
        self.last_kernels = len(kernels)
        total = sum(ns for _, ns in kernels)
        if not kernels or not total > 0:
            raise DeviceTimerError(f"{self.name}: no kernel records for {k} runs")
        if total > wall + _SLACK_NS:
            raise DeviceTimerError(f"{self.name}: kernels took {total:.0f} ns of a "
                                   f"{wall} ns sample (records from elsewhere?)")
        return total / k, wall / 1e9


def open_timer(name: str) -> SampleTimer:
    """The timer called ``name``; raises DeviceTimerError where a device timer is missing."""
    if name == HOST:
        return HostTimer()
    from tpugraphs_tools import _xla_compat as X

    opener = {CUPTI: X.cupti_kernel_records, PROFILER: X.profiler_kernel_records}.get(name)
    if opener is None:
        raise ValueError(f"unknown timer {name!r} (one of {TIMERS})")
    try:
        return KernelRecordTimer(name, opener())
    except Exception as exc:
        raise DeviceTimerError(f"{name}: not available here ({exc})") from exc


def choose_timer(choice: str, run: Run, tries: int = 2) -> tuple[SampleTimer, str | None]:
    """The timer ``choice`` names (``device``: the first of :data:`DEVICE_ORDER` that works),
    checked on ``run``; host time with the reason when no device timer works.

    ``choice`` is resolved already (``host``, ``device`` or a timer's name; device_env turns
    ``auto`` into one of them per platform and collection)."""
    if choice == HOST:
        return HostTimer(), None
    names = DEVICE_ORDER if choice == DEVICE else (choice,)
    reasons = []
    for name in names:
        try:
            timer = open_timer(name)
            for _ in range(tries):
                timer.sample(run, 1)
            return timer, None
        except DeviceTimerError as exc:
            reasons.append(str(exc))
    return HostTimer(), "; ".join(reasons)
