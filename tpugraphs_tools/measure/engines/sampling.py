"""Taking one timed sample: how many runs it holds, and timing them.

Kept apart from the statistics of paired rounds (``measure/stats/rounds.py``): these are the only
functions that touch the clock, and every engine that times samples of k runs uses them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


def calibrate(run: Callable[[], object], min_sample_ns: float, max_k: int = 100_000,
              looks: int = 3) -> int:
    """Runs per sample so one sample lasts ≥ ``min_sample_ns``: from the fastest per-run time
    of a few single runs and then ``looks`` looks of k back-to-back runs, k updated after each.

    Why the fastest: anything else running (a compile, another process loading) only makes a
    look slower, and a slow look chose a smaller k. Tile kernels of resnet18 tiny (~9 µs a
    run) were calibrated at k ≈ 120 in one collection and k ≈ 23 in the next from one slow
    look, and their labels moved between the two collections by more than their CIs (the
    processes of a graph share k, so its CI could not see it;
    docs/benchmarks/history/2026-12-06-tile-rerun-spread.md)."""
    times = []
    for _ in range(5):
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    fastest = float(max(1, min(times[1:])))  # the first run may still pay for a cold start
    for _ in range(looks):
        k = min(max_k, max(1, math.ceil(min_sample_ns / fastest)))
        if k == 1:
            break
        # single runs overstate per-run cost (launch): look at k back-to-back runs
        start = time.perf_counter_ns()
        for _ in range(k):
            run()
        fastest = min(fastest, max(1.0, (time.perf_counter_ns() - start) / k))
    return min(max_k, max(1, math.ceil(min_sample_ns / fastest)))


def timed_sample(run: Callable[[], object], k: int, prime: int = 0) -> tuple[float, float]:
    """(ns per run, seconds) of ``k`` back-to-back runs, after ``prime`` untimed runs when
    k > 1.

    An untimed run pays for switching programs (code and buffers back in cache). It was
    needed while the default was sampled more often than any config (it then looked ~0.7%
    faster than an identical copy of itself). Rounds now sample the default like any config,
    in random order, so the switch falls on every program alike; priming cost 1/(k+1) of the
    time and moved a config's sample away from the default's. On resnet18 tiny without it
    (``--prime-runs 0``, the default) four collections took 0.6× the wall time, with tighter
    CIs, more pairs claimed and all kept (docs/benchmarks/history/2026-12-03-prime-runs.md).
    """
    if k > 1:
        for _ in range(prime):
            run()
    start = time.perf_counter_ns()
    for _ in range(k):
        run()
    total = time.perf_counter_ns() - start
    return total / k, total / 1e9
