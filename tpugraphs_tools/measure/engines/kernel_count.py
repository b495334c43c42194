"""Kernels per run, checked on every device-timed sample of a batch.

A device timer sums the durations of the kernel records a sample collected. Nothing in that
sum says whether the records were the right ones: a record from another stream, a kernel of
a CUDA graph built before CUPTI subscribed that went unrecorded, a flush that split a sample
would all pass the "device time ≤ wall time" check and give a wrong label. What a program
launches per run is fixed once compiled, so the count is checked instead: a program's first
sample in the batch calibrates its kernels per run (its count must divide by k), and a later
sample whose count ÷ k differs is taken again, up to :data:`RETRIES` times; still off, the
sample raises :class:`DeviceTimerError` saying why, the engine re-times the batch on the host,
and each of its labels carries that reason (configs ``timer_fallback``). The count per run is
stored with each device-timed label (configs ``kernels_per_run``; the A/A control's is the
default's).
"""

from __future__ import annotations

from collections.abc import Hashable

from tpugraphs_tools.errors import DeviceTimerError
from tpugraphs_tools.measure.engines.device_timer import Run, SampleTimer

RETRIES = 2  # samples taken again before a count that stays off fails the timer


class KernelCountCheck:
    """One batch's samples through ``timer``, each program's kernel count checked."""

    def __init__(self, timer: SampleTimer, retries: int = RETRIES) -> None:
        self.timer = timer
        self.retries = retries
        self.per_run: dict[Hashable, int] = {}  # program -> kernels per run (calibrated)
        self.retried = 0                        # samples taken again, over the batch

    def sample(self, program: Hashable, run: Run, k: int, prime: int = 0
               ) -> tuple[float, float]:
        """(ns per run, seconds) of one sample of ``program``; the host clock is not
        checked (it counts no kernels)."""
        why = ""
        for attempt in range(self.retries + 1):
            ns, seconds = self.timer.sample(run, k, prime)
            count = self.timer.last_kernels
            if count is None:
                return ns, seconds
            why = self._mismatch(program, count, k)
            if not why:
                self.per_run.setdefault(program, count // k)
                return ns, seconds
            self.retried += attempt < self.retries
        raise DeviceTimerError(f"{self.timer.name}: kernel count off after {self.retries} "
                               f"retries: {why}")

    def _mismatch(self, program: Hashable, count: int, k: int) -> str:
        """Why ``count`` kernels in ``k`` runs disagree with the program's calibration."""
        if count % k:
            return f"{count} kernels in {k} runs is no whole number a run"
        expected = self.per_run.get(program)
        if expected is not None and count != expected * k:
            return (f"{count // k} kernels a run, calibrated at {expected} "
                    f"({count} in {k} runs)")
        return ""

    def kernels_per_run(self, program: Hashable) -> int | None:
        return self.per_run.get(program)
